// `memtide/lexical` in Cloudflare Workers (the `workerd` condition): the
// Workers entry without the model. Wrangler uploads every .wasm the entry
// imports, compiled at upload and counted against the Worker's size limit,
// so this one imports the core's only; a Worker that never gives a model
// uploads 0.8 MiB of WebAssembly instead of 2.6. A Worker that gives a
// model imports `memtide` (Wrangler turns only imports of a `.wasm` path
// into modules, so the package's `memtide/model-wasm` subpath is no way to
// hand this entry the model's module).
import wasmModule from "./wasm/memtide_bg.wasm";
import { entry } from "./memory.js";
import { noModelModule } from "./no-model.js";

export const { Memory, init } = entry(() => wasmModule, noModelModule);
export { MemtideError, wasmMemoryBytes } from "./memory.js";
