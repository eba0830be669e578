// A Worker as `wrangler init` would write it: each request opens a store
// (in memory: Workers have no IndexedDB), ingests, retrieves and closes.
// It also curates as an app at the edge would, with functions standing in
// for the app's model: an extractor whose update supersedes a preference,
// and a summarizer.
import { Memory } from "memtide";

const scope = { userId: "u1", workspaceId: "worker-app" };

// What a model asked for operations would answer on these two turns.
function extractor({ messages, memories }) {
  const said = messages.map((m) => m.content).join(" ");
  const old = memories.find((m) => m.text.includes("cortado"));
  if (said.includes("flat white") && old) {
    return [{ op: "update", id: old.id, text: "Takes their coffee as a flat white" }];
  }
  return [{ op: "add", text: "Takes their coffee as a cortado", kind: "preference" }];
}

export default {
  async fetch() {
    const mem = await Memory.open();
    await mem.ingest({ text: "The lighthouse keeper feeds the cat at dawn.", scope });
    const hits = await mem.retrieve({ text: "who feeds the cat?", scope });
    const first = await mem.remember([{ role: "user", content: "I take my coffee as a cortado." }], { scope, extractor });
    const second = await mem.remember([{ role: "user", content: "I switched my coffee to flat whites." }], { scope, extractor });
    const coffee = await mem.retrieve({ text: "how do I take my coffee?", scope, dryRun: true });
    const summary = await mem.summarize({ scope, summarizer: ({ memories }) => memories.map((m) => m.text).join("; ") });
    const history = await mem.history(first.added[0]);
    // The model's own module starts here too: its answer to a tokenizer it
    // refuses is INVALID_INPUT (MODEL if it could not start).
    const modelModule = await mem.setModel({ onnx: new Uint8Array(8), tokenizer: "{}" }).then(() => "loaded", (e) => e.code);
    await mem.close();
    return Response.json({
      hits: hits.map((h) => h.item.text),
      superseded: second.superseded,
      added: [first.added, second.added],
      coffee: coffee.map((h) => h.item.text),
      history: history.map((e) => [e.event, e.other ?? null]),
      summary: { kind: summary.kind, text: summary.text, sources: summary.summaryOf.length },
      modelModule,
    });
  },
};
