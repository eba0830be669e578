// Node entry point: loads the WebAssembly module from the package directory.
import { readFile } from "node:fs/promises";
import { initSync } from "./wasm/memtide.js";

initSync({ module: await readFile(new URL("./wasm/memtide_bg.wasm", import.meta.url)) });

export { Memory, MemtideError, wasmMemoryBytes } from "./memory.js";
