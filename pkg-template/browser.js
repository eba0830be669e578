// Browser entry point: fetches and compiles the WebAssembly module (streaming)
// from beside this file.
import init from "./wasm/memtide.js";

await init({ module_or_path: new URL("./wasm/memtide_bg.wasm", import.meta.url) });

export { Memory, MemtideError, wasmMemoryBytes } from "./memory.js";
