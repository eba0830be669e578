// Node entry point: loads the WebAssembly module from the package directory.
import { readFile } from "node:fs/promises";
import { initSync } from "./wasm/mnemo.js";

initSync({ module: await readFile(new URL("./wasm/mnemo_bg.wasm", import.meta.url)) });

export { Memory, MnemoError, wasmMemoryBytes } from "./memory.js";
