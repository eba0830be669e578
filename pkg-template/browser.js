// Browser entry point (and the default): fetches and compiles the WebAssembly
// modules (streaming) from beside this file, the model's only when an app
// gives a model. Bundlers (Vite, webpack, Rollup, esbuild with a loader)
// recognise `new URL("…", import.meta.url)` and emit each .wasm as an asset
// with its hashed URL.
import { entry } from "./memory.js";

export const { Memory, init } = entry(
  () => new URL("./wasm/memtide_bg.wasm", import.meta.url),
  () => new URL("./wasm/memtide_model_bg.wasm", import.meta.url),
);
export { MemtideError, wasmMemoryBytes } from "./memory.js";
