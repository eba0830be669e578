// A Node ESM app: `node main.mjs [default|bytes|module|broken-first]` opens a
// store, ingests, retrieves, closes and prints what it found as JSON. The
// argument says where the WebAssembly module comes from.
import { readFile } from "node:fs/promises";
import { Memory, init, wasmMemoryBytes } from "memtide";

const how = process.argv[2] ?? "default";
const wasmFile = () => readFile(new URL(import.meta.resolve("memtide/wasm")));
const report = {};

if (how === "bytes") await init({ wasm: await wasmFile() });
if (how === "module") await init({ wasm: await WebAssembly.compile(await wasmFile()) });
if (how === "broken-first") {
  // A failed start is not kept: the next open starts the module afresh.
  report.broken = await init({ wasm: new Uint8Array([0, 97, 115, 109]) }).then(() => "started", (e) => e.name);
}
report.bytesBeforeOpen = wasmMemoryBytes();

const scope = { userId: "u1", workspaceId: "node-app" };
const mem = await Memory.open();
await mem.ingest({ text: "The lighthouse keeper feeds the cat at dawn.", scope });
report.hits = (await mem.retrieve({ text: "who feeds the cat?", scope })).map((h) => h.item.text);
// The model's own module starts here too: its answer to a tokenizer it
// refuses is INVALID_INPUT (MODEL if it could not start).
report.modelModule = await mem.setModel({ onnx: new Uint8Array(8), tokenizer: "{}" }).then(() => "loaded", (e) => e.code);
report.bytesAfterOpen = wasmMemoryBytes();
await mem.close();
console.log(JSON.stringify(report));
