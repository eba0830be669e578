// Cloudflare Workers entry point (the `workerd` condition, which Wrangler
// sets): Wrangler's bundler turns the .wasm import into a compiled module,
// as Workers forbid compiling WebAssembly from bytes at run time.
import wasmModule from "./wasm/memtide_bg.wasm";
import { entry } from "./memory.js";

export const { Memory, init } = entry(() => wasmModule);
export { MemtideError, wasmMemoryBytes } from "./memory.js";
