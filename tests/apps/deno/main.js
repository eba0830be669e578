// A Deno program importing the package through an npm: specifier; Deno
// resolves it from the node_modules directory of tests/apps (deno.json:
// `"nodeModulesDir": "manual"`, as in a project npm installs).
import { Memory } from "npm:memtide";

const scope = { userId: "u1", workspaceId: "deno-app" };
const mem = await Memory.open();
await mem.ingest({ text: "The lighthouse keeper feeds the cat at dawn.", scope });
const hits = await mem.retrieve({ text: "who feeds the cat?", scope });
// The model's own module starts here too: its answer to a tokenizer it
// refuses is INVALID_INPUT (MODEL if it could not start).
const modelModule = await mem.setModel({ onnx: new Uint8Array(8), tokenizer: "{}" }).then(() => "loaded", (e) => e.code);
await mem.close();
console.log(JSON.stringify({ hits: hits.map((h) => h.item.text), modelModule }));
