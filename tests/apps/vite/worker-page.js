// The Vite app's second page: the same as main.js, with the store in a
// dedicated worker (memory-worker.js) through `memtide/worker`, which Vite
// bundles from `new Worker(new URL(…, import.meta.url), { type: "module" })`.
// The test reads `window.memtideApp`.
import { WorkerMemory } from "memtide/worker";

const scope = { userId: "u1", workspaceId: "web-app" };

async function runInWorker() {
  try {
    const worker = new Worker(new URL("./memory-worker.js", import.meta.url), { type: "module" });
    const mem = await WorkerMemory.open(worker, { name: "memtide-worker-app" });
    const before = (await mem.stats()).items;
    if (before === 0) await mem.ingest({ text: "The lighthouse keeper feeds the cat at dawn.", scope });
    const hits = await mem.retrieve({ text: "who feeds the cat?", scope });
    // The model's own module starts here too: its answer to a tokenizer it
    // refuses is INVALID_INPUT (MODEL if it could not start).
    const modelModule = await mem.setModel({ onnx: new Uint8Array(8), tokenizer: "{}" }).then(() => "loaded", (e) => e.code);
    await mem.close();
    worker.terminate();
    return { before, hits: hits.map((h) => h.item.text), modelModule };
  } catch (error) {
    return { error: String(error?.stack ?? error) };
  }
}

runInWorker().then((outcome) => {
  window.memtideApp = outcome;
});
