// `memtide/lexical` in Cloudflare Workers (the `workerd` condition): the
// Workers entry without the model. Wrangler uploads every .wasm the entry
// imports, compiled at upload and counted against the Worker's size limit,
// so this one imports the core's only; a Worker that never gives a model
// uploads 0.8 MiB of WebAssembly instead of 2.6. A Worker that gives a
// model imports `memtide` (Wrangler turns only imports of a `.wasm` path
// into modules, so the package's `memtide/model-wasm` subpath is no way to
// hand this entry the model's module).
import wasmModule from "./wasm/memtide_bg.wasm";
import { entry, MemtideError } from "./memory.js";

function noModelModule() {
  throw new MemtideError(
    "model error: `memtide/lexical` leaves the model's WebAssembly module out of a Worker: a Worker that gives a model imports `memtide`",
    "MODEL");
}

export const { Memory, init } = entry(() => wasmModule, noModelModule);
export { MemtideError, wasmMemoryBytes } from "./memory.js";
