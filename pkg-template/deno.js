// Deno entry point: reads the WebAssembly module from beside this file.
import { initSync } from "./wasm/memtide.js";

initSync({ module: await Deno.readFile(new URL("./wasm/memtide_bg.wasm", import.meta.url)) });

export { Memory, MemtideError, wasmMemoryBytes } from "./memory.js";
