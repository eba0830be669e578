// Cloudflare Workers entry point: the bundler hands over the compiled module.
import wasmModule from "./wasm/mnemo_bg.wasm";
import { initSync } from "./wasm/mnemo.js";

initSync({ module: wasmModule });

export { Memory, MnemoError, wasmMemoryBytes } from "./memory.js";
