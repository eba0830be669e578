// Browser entry point: fetches and compiles the WebAssembly module (streaming)
// from beside this file.
import init from "./wasm/mnemo.js";

await init({ module_or_path: new URL("./wasm/mnemo_bg.wasm", import.meta.url) });

export { Memory, MnemoError, wasmMemoryBytes } from "./memory.js";
