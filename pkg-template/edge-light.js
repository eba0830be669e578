// Vercel Edge Functions and the Next.js edge runtime (the `edge-light`
// condition): like Workers, they refuse to compile WebAssembly from bytes at
// run time, and their bundlers hand a `?module` import over as a compiled
// module (both modules; the model's is instantiated only when an app gives
// a model).
import wasmModule from "./wasm/memtide_bg.wasm?module";
import modelWasmModule from "./wasm/memtide_model_bg.wasm?module";
import { entry } from "./memory.js";

export const { Memory, init } = entry(() => wasmModule, () => modelWasmModule);
export { MemtideError, wasmMemoryBytes } from "./memory.js";
