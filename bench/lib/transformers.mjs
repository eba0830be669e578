// transformers.js fully offline on onnxruntime-web's wasm backend, in Node.
//
// In Node transformers.js picks onnxruntime-node and refuses device "wasm",
// so for the wasm backend onnxruntime-web is handed to it through the global symbol it checks
// first, its wasm files come from node_modules, and device "auto" with an
// explicit `wasm` execution provider gets past its device list. Remote
// models are off and every fetch of a non-file URL throws, so nothing is
// downloaded.
import { createRequire } from "node:module";
import path from "node:path";
import { HF_MODEL_NAME, layOutHfModel } from "./hf-model.mjs";

const realFetch = globalThis.fetch;
globalThis.fetch = (url, ...rest) => {
  const href = String(url?.url ?? url);
  if (/^(https?|wss?):/i.test(href)) throw new Error(`bench: network access refused (${href})`);
  return realFetch(url, ...rest);
};

const require = createRequire(import.meta.url);

/**
 * transformers.js on `backend`: "wasm" (onnxruntime-web, one thread) or
 * "node" (onnxruntime-node, its default in Node, one intra-op thread).
 * Call once per process, before anything else imports transformers.js.
 */
export async function loadTransformers(backend) {
  if (backend === "wasm") {
    const ort = await import("onnxruntime-web");
    ort.env.wasm.wasmPaths = path.dirname(require.resolve("onnxruntime-web")) + path.sep;
    // memtide's tract runs on one thread; so does the peer.
    ort.env.wasm.numThreads = 1;
    globalThis[Symbol.for("onnxruntime")] = ort;
  }
  const transformers = await import("@huggingface/transformers");
  transformers.env.allowRemoteModels = false;
  const versions = transformers.env.backends.onnx.versions ?? {};
  return {
    version: transformers.env.version,
    ortVersion: backend === "wasm" ? versions.web : versions.node ?? "onnxruntime-node",
    /** The feature-extraction pipeline on the same ONNX file as memtide. */
    async pipeline(memtideModelDir) {
      transformers.env.localModelPath = layOutHfModel(memtideModelDir) + path.sep;
      return transformers.pipeline("feature-extraction", HF_MODEL_NAME, backend === "wasm"
        ? { device: "auto", dtype: "q8", session_options: { executionProviders: ["wasm"] } }
        : { device: "cpu", dtype: "q8", session_options: { intraOpNumThreads: 1, interOpNumThreads: 1 } });
    },
  };
}

/** The pooling memtide uses: mean over the attention mask, L2 normalized. */
export const POOLING = { pooling: "mean", normalize: true };
