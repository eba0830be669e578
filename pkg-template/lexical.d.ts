// `memtide/lexical`: the API of `memtide`. In Cloudflare Workers (the
// `workerd` condition) its entry does not import the model's WebAssembly
// module, so a Worker that never gives a model does not upload it; there a
// model needs `modelWasm` (the compiled `memtide/model-wasm`) on `init` or
// `Memory.open`, and without it `model`/`setModel` fail with `MODEL`.
// Elsewhere it is `memtide` (whose model module loads only with a model).
export * from "./index.js";
