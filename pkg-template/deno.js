// Deno entry point: reads the WebAssembly module from beside this file.
import { initSync } from "./wasm/mnemo.js";

initSync({ module: await Deno.readFile(new URL("./wasm/mnemo_bg.wasm", import.meta.url)) });

export { Memory, MnemoError, wasmMemoryBytes } from "./memory.js";
