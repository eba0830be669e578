// Node entry point: reads the WebAssembly module from the package directory
// (Node's fetch cannot read file: URLs).
import { readFile } from "node:fs/promises";
import { entry } from "./memory.js";

export const { Memory, init } = entry(() => readFile(new URL("./wasm/memtide_bg.wasm", import.meta.url)));
export { MemtideError, wasmMemoryBytes } from "./memory.js";
