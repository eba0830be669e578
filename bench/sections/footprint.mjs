// Section 5, footprint: the package's .wasm raw and gzipped (level 9,
// without the model) against onnxruntime-web's .wasm (what transformers.js
// runs on), and the npm package's wasm linear memory after `Memory.open`
// with the model (in a fresh process). Heap per 10k memories comes from the
// retrieval section.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { isMain, runNodeChild } from "../lib/child.mjs";
import { PACKAGE_DIR, PACKAGE_WASM, modelDir } from "../lib/paths.mjs";

const require = createRequire(import.meta.url);
const ORT_WASM = path.join(path.dirname(require.resolve("onnxruntime-web")), "ort-wasm-simd-threaded.wasm");

function sizes(file) {
  const bytes = fs.readFileSync(file);
  return { file: path.basename(file), raw: bytes.length, gzip: zlib.gzipSync(bytes, { level: 9 }).length };
}

/** In a fresh process: wasm memory of the package after opening a store with the model. */
async function modelMemory() {
  const { Memory, wasmMemoryBytes } = await import(path.join(PACKAGE_DIR, "node.js"));
  const before = wasmMemoryBytes();
  const dir = modelDir();
  const model = { onnx: fs.readFileSync(path.join(dir, "model.onnx")), tokenizer: fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8") };
  const start = performance.now();
  const memory = await Memory.open({ storage: "memory", model });
  const loadMs = performance.now() - start;
  const stats = await memory.stats();
  return { before, afterLoad: wasmMemoryBytes(), loadMs, retrievalMode: stats.retrievalMode };
}

export function runFootprint({ log }) {
  log("footprint: .wasm sizes, package memory with the model");
  return {
    memtideWasm: sizes(PACKAGE_WASM),
    ortWasm: sizes(ORT_WASM),
    model: runNodeChild(fileURLToPath(import.meta.url)),
  };
}

if (isMain(import.meta.url)) {
  console.log(JSON.stringify(await modelMemory()));
}
