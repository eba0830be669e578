// What the model loader of `memtide/lexical`'s Workers and edge entries
// throws: they leave the model's WebAssembly module out of the upload, and
// those runtimes compile no WebAssembly from bytes at run time.
import { MemtideError } from "./error.js";

export function noModelModule() {
  throw new MemtideError(
    "model error: `memtide/lexical` leaves the model's WebAssembly module out of a Worker or an edge function: one that gives a model imports `memtide`",
    "MODEL");
}
