// Node entry point: reads the WebAssembly modules from the package directory
// (Node's fetch cannot read file: URLs), the model's only when an app gives
// a model.
import { readFile } from "node:fs/promises";
import { entry } from "./memory.js";

export const { Memory, init } = entry(
  () => readFile(new URL("./wasm/memtide_bg.wasm", import.meta.url)),
  () => readFile(new URL("./wasm/memtide_model_bg.wasm", import.meta.url)),
);
export { MemtideError, wasmMemoryBytes } from "./memory.js";
