// memtide in a Cloudflare Worker: POST /ingest, /retrieve, /inject over
// memories kept in the MEMORIES KV namespace. The model files live in the
// MODEL KV namespace (keys `model.onnx`, 23 MB, and `tokenizer.json`: too big
// for the script bundle, within KV's 25 MiB per value) and are read once per
// isolate; without them retrieval is lexical-only. (A Worker that never
// loads a model imports `memtide/lexical` instead, which leaves the model's
// WebAssembly module out of the upload: docs/edge.md.)
import { Memory, wasmMemoryBytes } from "memtide";
import { CloudflareKvStorage } from "memtide/cloudflare-kv";
import { handleMemoryRequest } from "../http-handler.js";

/** The isolate's store, opened by the first request. */
let opening;

async function openMemory(env) {
  const [onnx, tokenizer] = await Promise.all([
    env.MODEL?.get("model.onnx", "arrayBuffer"),
    env.MODEL?.get("tokenizer.json", "text"),
  ]);
  const model = onnx && tokenizer ? { onnx, tokenizer } : undefined;
  return Memory.open({ storage: new CloudflareKvStorage(env.MEMORIES), model });
}

export default {
  async fetch(request, env) {
    opening ??= openMemory(env).catch((error) => {
      opening = undefined; // let the next request try again
      throw error;
    });
    let mem;
    try {
      mem = await opening;
    } catch (error) {
      const body = { error: { code: error?.code ?? "STORAGE", message: String(error?.message ?? error) } };
      return new Response(JSON.stringify(body), { status: 503, headers: { "content-type": "application/json" } });
    }
    if (new URL(request.url).pathname === "/memory") {
      // How much of the isolate's 128 MB memtide holds (WebAssembly memory).
      return Response.json({ wasmMemoryBytes: wasmMemoryBytes(), stats: await mem.stats() });
    }
    return handleMemoryRequest(mem, request);
  },
};
