// Browser entry point (and the default): fetches and compiles the WebAssembly
// module (streaming) from beside this file. Bundlers (Vite, webpack, Rollup,
// esbuild with a loader) recognise `new URL("…", import.meta.url)` and emit
// the .wasm as an asset with its hashed URL.
import { entry } from "./memory.js";

export const { Memory, init } = entry(() => new URL("./wasm/memtide_bg.wasm", import.meta.url));
export { MemtideError, wasmMemoryBytes } from "./memory.js";
