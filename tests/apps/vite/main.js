// The page of every browser app (this Vite app, webpack, Next.js): opens
// the default store (IndexedDB in a browser), ingests one memory when the
// store is empty, retrieves it, closes, and leaves the outcome for the test.
// Reloaded, the page must find the memory already stored.
import { Memory } from "memtide";

const scope = { userId: "u1", workspaceId: "web-app" };

export async function runApp() {
  try {
    // `?wasm=<url>`: the page says where the .wasm is (a CDN, a path the
    // Content-Security-Policy allows).
    const wasm = new URLSearchParams(location.search).get("wasm") ?? undefined;
    const mem = await Memory.open({ name: "memtide-app", wasm });
    const before = (await mem.stats()).items;
    if (before === 0) await mem.ingest({ text: "The lighthouse keeper feeds the cat at dawn.", scope });
    const hits = await mem.retrieve({ text: "who feeds the cat?", scope });
    // The model's own module starts here too: its answer to a tokenizer it
    // refuses is INVALID_INPUT (MODEL if it could not start).
    const modelModule = await mem.setModel({ onnx: new Uint8Array(8), tokenizer: "{}" }).then(() => "loaded", (e) => e.code);
    await mem.close();
    return { before, hits: hits.map((h) => h.item.text), modelModule };
  } catch (error) {
    return { error: String(error?.stack ?? error) };
  }
}
