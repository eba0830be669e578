// The playground's memory store, in a dedicated worker so that compiling the
// model and embedding never freeze the page. It opens the IndexedDB store
// first (lexical-only, usable at once), then fetches the model with progress
// and attaches it. The page calls the store's methods by message:
//
//   page -> worker   { id, method, args }
//   worker -> page   { id, result } | { id, error: { code, message } }
//                    { event: "download", loaded, total }
//                    { event: "mode", mode: "lexical" | "embedding" | "hybrid", ... }
//                    { event: "change" }        another tab wrote to the store
//                    { event: "failed", message }   the store could not open
import { Memory, wasmMemoryBytes } from "/memtide/browser.js";
import { fetchModel } from "/memtide/model.js";

const DATABASE = "memtide-playground";
const methods = new Set([
  "ingest", "retrieve", "inject", "get", "list", "update", "delete", "deleteAll", "export", "import", "stats",
]);

const post = (message) => self.postMessage(message);

async function loadModel(memory) {
  const files = new Map();
  const model = await fetchModel({
    onnxUrl: "/model/model.onnx",
    tokenizerUrl: "/model/tokenizer.json",
    onProgress: ({ url, loaded, total }) => {
      files.set(url, { loaded, total: total ?? loaded });
      const sum = (key) => [...files.values()].reduce((s, f) => s + f[key], 0);
      post({ event: "download", loaded: sum("loaded"), total: sum("total") });
    },
  });
  post({ event: "mode", mode: "embedding", fromCache: model.fromCache });
  const embedded = await memory.setModel(model);
  post({ event: "mode", mode: "hybrid", fromCache: model.fromCache, embedded });
}

const opened = Memory.open({ name: DATABASE, onChange: () => post({ event: "change" }) }).then((memory) => {
  post({ event: "mode", mode: "lexical" });
  loadModel(memory).catch((error) => {
    post({ event: "mode", mode: "lexical", error: String(error?.message ?? error) });
  });
  return memory;
});
opened.catch((error) => post({ event: "failed", message: String(error?.message ?? error) }));

async function call(method, args) {
  if (method === "usage") return { wasmBytes: wasmMemoryBytes() };
  if (!methods.has(method)) throw Object.assign(new Error(`unknown method ${method}`), { code: "INVALID_INPUT" });
  const memory = await opened;
  return memory[method](...args);
}

self.onmessage = async ({ data: { id, method, args } }) => {
  try {
    post({ id, result: await call(method, args ?? []) });
  } catch (error) {
    post({ id, error: { code: error?.code ?? "INTERNAL", message: String(error?.message ?? error) } });
  }
};
