// `memtide/lexical`: the API of `memtide`. In Cloudflare Workers and Vercel
// Edge (the `workerd` and `edge-light` conditions) its entry does not import
// the model's WebAssembly module, so an app that never gives a model does
// not upload it; there `model`/`setModel` fail with `MODEL` (an app that
// gives a model imports `memtide`). Elsewhere it is `memtide` (whose model module loads only with
// a model).
export * from "./index.js";
