// `memtide/lexical` in Cloudflare Workers (the `workerd` condition): the
// Workers entry without the model. Wrangler uploads every .wasm the entry
// imports, compiled at upload and counted against the Worker's size limit,
// so this one imports the core's only; a Worker that never gives a model
// uploads 0.8 MiB of WebAssembly instead of 2.6. Giving a model then needs
// the model's module as `modelWasm` (`init`, `Memory.open`).
import wasmModule from "./wasm/memtide_bg.wasm";
import { entry, MemtideError } from "./memory.js";

function noModelModule() {
  throw new MemtideError(
    "model error: `memtide/lexical` does not bundle the model's WebAssembly module: import `memtide`, or pass `modelWasm` (the compiled `memtide/model-wasm`) to `init` or `Memory.open`",
    "MODEL");
}

export const { Memory, init } = entry(() => wasmModule, noModelModule);
export { MemtideError, wasmMemoryBytes } from "./memory.js";
