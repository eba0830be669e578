// Cloudflare Workers entry point: the bundler hands over the compiled module.
import wasmModule from "./wasm/memtide_bg.wasm";
import { initSync } from "./wasm/memtide.js";

initSync({ module: wasmModule });

export { Memory, MemtideError, wasmMemoryBytes } from "./memory.js";
