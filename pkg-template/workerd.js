// Cloudflare Workers entry point (the `workerd` condition, which Wrangler
// sets): Wrangler's bundler turns each .wasm import into a compiled module,
// as Workers forbid compiling WebAssembly from bytes at run time. Both
// modules are imported (compiled at upload); the model's is instantiated
// only when an app gives a model.
import wasmModule from "./wasm/memtide_bg.wasm";
import modelWasmModule from "./wasm/memtide_model_bg.wasm";
import { entry } from "./memory.js";

export const { Memory, init } = entry(() => wasmModule, () => modelWasmModule);
export { MemtideError, wasmMemoryBytes } from "./memory.js";
