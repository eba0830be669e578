// Deno entry point: reads the WebAssembly module from beside this file.
import { entry } from "./memory.js";

export const { Memory, init } = entry(() => Deno.readFile(new URL("./wasm/memtide_bg.wasm", import.meta.url)));
export { MemtideError, wasmMemoryBytes } from "./memory.js";
