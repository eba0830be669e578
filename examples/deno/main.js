// memtide in Deno 2: POST /ingest, /retrieve, /inject over a store kept in
// Deno KV. The model is read once per process from MEMTIDE_MODEL_DIR (omit it
// for lexical-only retrieval).
//
//   deno run --allow-read --allow-env --allow-net --unstable-kv main.js
//   MEMTIDE_KV=./memories.kv  MEMTIDE_MODEL_DIR=~/.cache/memtide/models/all-MiniLM-L6-v2-int8  PORT=8787
import { Memory } from "memtide";
import { DenoKvStorage } from "memtide/deno-kv";
import { handleMemoryRequest } from "../http-handler.js";

/** Reads `model.onnx` and `tokenizer.json` from `dir`. */
export async function readModel(dir) {
  return {
    onnx: await Deno.readFile(`${dir}/model.onnx`),
    tokenizer: await Deno.readTextFile(`${dir}/tokenizer.json`),
  };
}

/** A store over `kv` and the request handler serving it. */
export async function createApp({ kv, model, namespace }) {
  const mem = await Memory.open({ storage: new DenoKvStorage(kv, namespace), model });
  return { mem, handler: (request) => handleMemoryRequest(mem, request) };
}

if (import.meta.main) {
  const kv = await Deno.openKv(Deno.env.get("MEMTIDE_KV"));
  const modelDir = Deno.env.get("MEMTIDE_MODEL_DIR");
  const { handler } = await createApp({ kv, model: modelDir ? await readModel(modelDir) : undefined });
  Deno.serve({ port: Number(Deno.env.get("PORT") ?? 8787), hostname: "127.0.0.1" }, handler);
}
