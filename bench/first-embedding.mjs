// A model-using path's first embedding in Node, through a built package: in
// a fresh process each run, the package's import, `Memory.open({ storage:
// "memory", model })` (starting the WebAssembly module(s) and loading the
// model) and the first `ingest` (one text embedded), in milliseconds; the
// medians over the runs. For comparing two builds of the package (issue 21,
// the model's own module: docs/benchmarks.md).
//
// Usage: node bench/first-embedding.mjs [PACKAGE_DIR=dist/memtide] [RUNS=5]
import { execFileSync } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { modelDir, PACKAGE_DIR } from "./lib/paths.mjs";
import { median } from "./lib/stats.mjs";

const [dir = PACKAGE_DIR, runs = "5"] = process.argv.slice(2);
const entry = pathToFileURL(path.join(path.resolve(dir), "node.js")).href;
const model = modelDir();

// One cold run, in its own process.
const child = `
const t0 = performance.now();
const { Memory } = await import(${JSON.stringify(entry)});
const imported = performance.now();
const { readFile } = await import("node:fs/promises");
const model = {
  onnx: await readFile(${JSON.stringify(`${model}/model.onnx`)}),
  tokenizer: await readFile(${JSON.stringify(`${model}/tokenizer.json`)}, "utf8"),
};
const read = performance.now();
const mem = await Memory.open({ storage: "memory", model });
const opened = performance.now();
await mem.ingest({ text: "The lighthouse keeper feeds the cat at dawn.", scope: { userId: "u", workspaceId: "w" } });
const embedded = performance.now();
await mem.close();
console.log(JSON.stringify({ import: imported - t0, open: opened - read, ingest: embedded - opened, total: embedded - t0 - (read - imported) }));
`;

const samples = [];
for (let i = 0; i < Number(runs); i++) {
  samples.push(JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", child], { encoding: "utf8" })));
}
const result = Object.fromEntries(Object.keys(samples[0]).map((k) => [k, Math.round(median(samples.map((s) => s[k])))]));
console.log(JSON.stringify({ package: dir, runs: samples.length, medianMs: result }));
