// Deno entry point: reads the WebAssembly modules from beside this file, the
// model's only when an app gives a model.
import { entry } from "./memory.js";

export const { Memory, init } = entry(
  () => Deno.readFile(new URL("./wasm/memtide_bg.wasm", import.meta.url)),
  () => Deno.readFile(new URL("./wasm/memtide_model_bg.wasm", import.meta.url)),
);
export { MemtideError, wasmMemoryBytes } from "./memory.js";
