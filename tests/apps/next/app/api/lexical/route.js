// A route handler in the edge runtime that never gives a model, on
// `memtide/lexical`: the `edge-light` entry without the model's module, so
// the edge function uploads the core's .wasm only.
import { Memory } from "memtide/lexical";

export const runtime = "edge";

const scope = { userId: "u1", workspaceId: "next-edge-lexical" };

export async function GET() {
  const mem = await Memory.open();
  await mem.ingest({ text: "The lighthouse keeper feeds the cat at dawn.", scope });
  const hits = await mem.retrieve({ text: "who feeds the cat?", scope });
  const { retrievalMode } = await mem.stats();
  const model = await mem.setModel({ onnx: new Uint8Array(8), tokenizer: "{}" })
    .then(() => ({ code: "loaded" }), (e) => ({ code: e.code, message: e.message }));
  await mem.close();
  return Response.json({ hits: hits.map((h) => h.item.text), retrievalMode, model });
}
