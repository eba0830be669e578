// A route handler in the edge runtime (Vercel Edge, `next start`'s edge
// sandbox): the `edge-light` entry, memories in memory.
import { Memory } from "memtide";

export const runtime = "edge";

const scope = { userId: "u1", workspaceId: "next-edge" };

export async function GET() {
  const mem = await Memory.open();
  await mem.ingest({ text: "The lighthouse keeper feeds the cat at dawn.", scope });
  const hits = await mem.retrieve({ text: "who feeds the cat?", scope });
  // The model's own module starts here too: its answer to a tokenizer it
  // refuses is INVALID_INPUT (MODEL if it could not start).
  const modelModule = await mem.setModel({ onnx: new Uint8Array(8), tokenizer: "{}" }).then(() => "loaded", (e) => e.code);
  await mem.close();
  return Response.json({ hits: hits.map((h) => h.item.text), modelModule });
}
