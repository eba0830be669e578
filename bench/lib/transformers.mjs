// transformers.js fully offline on onnxruntime-web's wasm backend, in Node.
//
// In Node transformers.js picks onnxruntime-node and refuses device "wasm",
// so onnxruntime-web is handed to it through the global symbol it checks
// first, its wasm files come from node_modules, and device "auto" with an
// explicit `wasm` execution provider gets past its device list. Remote
// models are off and every fetch of a non-file URL throws, so nothing is
// downloaded.
import { createRequire } from "node:module";
import path from "node:path";
import * as ort from "onnxruntime-web";
import { HF_MODEL_NAME, layOutHfModel } from "./hf-model.mjs";

const realFetch = globalThis.fetch;
globalThis.fetch = (url, ...rest) => {
  const href = String(url?.url ?? url);
  if (/^(https?|wss?):/i.test(href)) throw new Error(`bench: network access refused (${href})`);
  return realFetch(url, ...rest);
};

const require = createRequire(import.meta.url);
ort.env.wasm.wasmPaths = path.dirname(require.resolve("onnxruntime-web")) + path.sep;
// mnemo's tract runs on one thread; so does the peer.
ort.env.wasm.numThreads = 1;
globalThis[Symbol.for("onnxruntime")] = ort;
const transformers = await import("@huggingface/transformers");
transformers.env.allowRemoteModels = false;

/** Loads the feature-extraction pipeline on the same ONNX file as mnemo. */
export async function loadPipeline(mnemoModelDir) {
  transformers.env.localModelPath = layOutHfModel(mnemoModelDir) + path.sep;
  return transformers.pipeline("feature-extraction", HF_MODEL_NAME, {
    device: "auto",
    dtype: "q8",
    session_options: { executionProviders: ["wasm"] },
  });
}

/** The pooling mnemo uses: mean over the attention mask, L2 normalized. */
export const POOLING = { pooling: "mean", normalize: true };

export const ORT_WEB_VERSION = ort.env.versions.web;
