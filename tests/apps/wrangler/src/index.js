// A Worker as `wrangler init` would write it: each request opens a store
// (in memory: Workers have no IndexedDB), ingests, retrieves and closes.
import { Memory } from "memtide";

const scope = { userId: "u1", workspaceId: "worker-app" };

export default {
  async fetch() {
    const mem = await Memory.open();
    await mem.ingest({ text: "The lighthouse keeper feeds the cat at dawn.", scope });
    const hits = await mem.retrieve({ text: "who feeds the cat?", scope });
    await mem.close();
    return Response.json({ hits: hits.map((h) => h.item.text) });
  },
};
