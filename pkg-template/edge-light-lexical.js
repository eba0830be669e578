// `memtide/lexical` in Vercel Edge Functions and the Next.js edge runtime
// (the `edge-light` condition): the edge entry without the model, whose
// `?module` import would put the model's module in the function's upload
// (counted against its size limit) even for an app that never gives a model.
import wasmModule from "./wasm/memtide_bg.wasm?module";
import { entry } from "./memory.js";
import { noModelModule } from "./no-model.js";

export const { Memory, init } = entry(() => wasmModule, noModelModule);
export { MemtideError, wasmMemoryBytes } from "./memory.js";
