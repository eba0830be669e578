// Section 10, wasm memory of an opened store (issue 21): how much
// WebAssembly linear memory the built npm package (dist/memtide, `node.js`)
// takes in Node once it has opened a store of `size` memories and answered
// one query, lexical-only (a store without embeddings: the model would embed
// every memory on open). For each package given (this build's, and
// optionally an older build's, `--wasmmem-before DIR`):
//
// - fill (fresh process): an empty Map-backed adapter gets `size` memories
//   of the seeded corpus (bench/lib/corpus.mjs, one scope) in ingests of
//   1,000; the Map is written to a file;
// - open (fresh process per size, so the linear memory, which never
//   shrinks, holds only this store): the Map is read back, `Memory.open`
//   over it, one `retrieve` with `dryRun`; `wasmMemoryBytes()` before the
//   open, after it, and after the answer.
//
// The model's own share comes from the footprint section (an empty store
// opened with the model): model + 100,000 memories is that plus the
// growth here.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isMain, parseArgs, runNodeChild } from "../lib/child.mjs";
import { memoryCorpus } from "../lib/corpus.mjs";
import { PACKAGE_DIR } from "../lib/paths.mjs";

const SCOPE = { userId: "bench", workspaceId: "main" };
const FILL_BATCH = 1000;
const MIB = 1024 * 1024;

function mapAdapter(map) {
  return {
    get: (key) => map.get(key) ?? null,
    put: (key, value) => void map.set(key, value.slice()),
    delete: (key) => void map.delete(key),
    list: (prefix) => [...map.keys()].filter((k) => k.startsWith(prefix)),
  };
}

/** Writes the Map as JSON Lines of [key, base64 value]. */
function save(map, file) {
  const lines = [...map].map(([k, v]) => JSON.stringify([k, Buffer.from(v).toString("base64")]));
  fs.writeFileSync(file, lines.join("\n") + "\n");
}

function load(file) {
  const map = new Map();
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    if (!line) continue;
    const [k, v] = JSON.parse(line);
    map.set(k, new Uint8Array(Buffer.from(v, "base64")));
  }
  return map;
}

async function fill({ size, out, pkg }) {
  const { Memory } = await import(path.join(pkg, "node.js"));
  const map = new Map();
  const memory = await Memory.open({ storage: mapAdapter(map) });
  const { texts } = memoryCorpus(size, 1);
  for (let i = 0; i < texts.length; i += FILL_BATCH) {
    await memory.ingest(texts.slice(i, i + FILL_BATCH).map((text) => ({ text, scope: SCOPE })));
  }
  const stats = await memory.stats();
  save(map, out);
  return { items: stats.items, keys: map.size, bytes: [...map.values()].reduce((n, v) => n + v.length, 0) };
}

async function open({ file, pkg, size }) {
  const { Memory, wasmMemoryBytes } = await import(path.join(pkg, "node.js"));
  const map = load(file);
  const before = wasmMemoryBytes();
  const memory = await Memory.open({ storage: mapAdapter(map) });
  const afterOpen = wasmMemoryBytes();
  const { queries } = memoryCorpus(size, 1);
  const hits = await memory.retrieve({ text: queries[0].text, scope: SCOPE, limit: 10, dryRun: true });
  const afterAnswer = wasmMemoryBytes();
  const stats = await memory.stats();
  if (stats.items !== size) throw new Error(`wasmmem: the store holds ${stats.items} memories, not ${size}`);
  if (hits.length === 0) throw new Error("wasmmem: the query found nothing");
  return { before, afterOpen, afterAnswer, formatVersion: stats.formatVersion };
}

export function runWasmMemory({ sizes, before, log, current = PACKAGE_DIR }) {
  const packages = [{ name: "current", pkg: current }];
  if (before) packages.push({ name: "before", pkg: path.resolve(before) });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "memtide-bench-wasmmem-"));
  const script = fileURLToPath(import.meta.url);
  const results = { sizes, packages: {} };
  try {
    for (const { name, pkg } of packages) {
      results.packages[name] = { pkg, sizes: {} };
      for (const size of sizes) {
        const file = path.join(work, `${name}-${size}.jsonl`);
        log(`wasmmem: ${name}: filling ${size} memories`);
        const filled = runNodeChild(script, ["--mode", "fill", "--size", size, "--out", file, "--pkg", pkg]);
        const opened = runNodeChild(script, ["--mode", "open", "--size", size, "--file", file, "--pkg", pkg]);
        const growth = opened.afterAnswer - opened.before;
        log(`wasmmem: ${name} ${size}: ${(growth / MIB).toFixed(1)} MiB after open + answer (format ${opened.formatVersion})`);
        results.packages[name].sizes[size] = { ...filled, ...opened, growth, per10k: growth / (size / 10000) };
        fs.rmSync(file);
      }
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return results;
}

if (isMain(import.meta.url)) {
  const args = parseArgs(process.argv.slice(2));
  const pkg = args.pkg ?? PACKAGE_DIR;
  if (args.mode === "fill") console.log(JSON.stringify(await fill({ size: args.size, out: args.out, pkg })));
  else if (args.mode === "open") console.log(JSON.stringify(await open({ file: args.file, pkg, size: args.size })));
  else {
    // Standalone: node bench/sections/wasmmem.mjs --sizes 10000,100000 [--pkg DIR] [--before DIR]
    const sizes = String(args.sizes ?? "10000").split(",").map(Number);
    console.log(JSON.stringify(runWasmMemory({ sizes, before: args.before, current: pkg, log: (m) => console.error(m) })));
  }
}
