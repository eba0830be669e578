// A Worker that never gives a model, importing `memtide/lexical` so that
// Wrangler uploads the core's WebAssembly module only: each request opens a
// store in memory, ingests, retrieves lexically, curates, and reports what a
// model asked of this entry answers.
import { Memory, wasmMemoryBytes } from "memtide/lexical";

const scope = { userId: "u1", workspaceId: "lexical-app" };

export default {
  async fetch() {
    const mem = await Memory.open();
    await mem.ingest([
      { text: "The lighthouse keeper feeds the cat at dawn.", scope },
      { text: "The ferry leaves the harbour at noon.", scope },
    ]);
    const hits = await mem.retrieve({ text: "who feeds the cat?", scope });
    const remembered = await mem.remember([{ role: "user", content: "I take my coffee as a cortado." }], {
      scope,
      extractor: () => [{ op: "add", text: "Takes their coffee as a cortado", kind: "preference" }],
    });
    const { retrievalMode, items } = await mem.stats();
    const model = await mem.setModel({ onnx: new Uint8Array(8), tokenizer: "{}" })
      .then(() => ({ code: "loaded" }), (e) => ({ code: e.code, message: e.message }));
    const bytes = wasmMemoryBytes();
    await mem.close();
    return Response.json({ hits: hits.map((h) => h.item.text), added: remembered.added.length, retrievalMode, items, model, bytes });
  },
};
