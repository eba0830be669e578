// `memtide/lexical`: the API of `memtide`. In Cloudflare Workers (the
// `workerd` condition) its entry does not import the model's WebAssembly
// module, so a Worker that never gives a model does not upload it; there
// `model`/`setModel` fail with `MODEL` (a Worker that gives a model imports
// `memtide`). Elsewhere it is `memtide` (whose model module loads only with
// a model).
export * from "./index.js";
