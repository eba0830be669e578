// Section 10, wasm memory of an opened store (issue 21): how much
// WebAssembly linear memory the built npm package (dist/memtide, `node.js`)
// takes in Node once it has opened a store of `size` memories and answered
// one query. For each package given (this build's, and optionally an older
// build's, `--wasmmem-before DIR`):
//
// - fill (fresh process): an empty Map-backed adapter gets `size` memories
//   of the seeded corpus (bench/lib/corpus.mjs, one scope) in ingests of
//   1,000; the Map is written to a file;
// - open (fresh process per size, so the linear memory, which never
//   shrinks, holds only this store): the Map is read back, `Memory.open`
//   over it, one `retrieve` with `dryRun`; `wasmMemoryBytes()` before the
//   open, after it, and after the answer.
//
// Two modes:
//
// - lexical-only (the default): a store without embeddings, opened without
//   the model. The model's own share comes from the footprint section.
// - with the model (`--model`, bench/main.mjs `--wasmmem-model`): every
//   memory embedded, opened with the model, the figure issue 21's target
//   names. Embedding 100,000 texts in wasm would take most of an hour, so
//   the store is filled natively by `fill_store` (bench/rust/fill_store.rs:
//   the same engine and model over an in-memory backend, same ingests; the
//   package finds every memory embedded with its model and embeds none,
//   which `open` checks). An empty store opened with the model and
//   answering one query is measured the same way (size 0): per 10,000
//   memories is the growth above it.
// - with the model and given vectors (`--model given`, bench/main.mjs
//   `--wasmmem-given-vectors`): the same, but the store holds the corpus's
//   own vectors under the model's id instead of the model's embeddings,
//   for sizes whose embedding is out of reach (natively, 100,000 texts
//   take most of an hour on a shared machine). A store's bytes and wasm
//   memory do not depend on the values of its codes: compare both kinds
//   at 10,000 to check that.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isMain, parseArgs, runNodeChild } from "../lib/child.mjs";
import { load, mapAdapter, save } from "../lib/map-store.mjs";
import { memoryCorpus } from "../lib/corpus.mjs";
import { FILL_STORE_BIN, PACKAGE_DIR, modelDir } from "../lib/paths.mjs";

const SCOPE = { userId: "bench", workspaceId: "main" };
const FILL_BATCH = 1000;
const MIB = 1024 * 1024;

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

/**
 * The store natively, every memory embedded by the model, or holding the
 * corpus's vectors under the model's id with `given` (see the top).
 */
function fillWithModel({ size, out, givenVectors }) {
  const texts = `${out}.texts`;
  const given = `${out}.vectors`;
  const { texts: corpus, vectors } = memoryCorpus(size, 1);
  fs.writeFileSync(texts, corpus.map((t) => JSON.stringify(t)).join("\n") + "\n");
  // Little-endian f32 rows (the corpus's Float32Array on a little-endian host).
  if (givenVectors) {
    if (os.endianness() !== "LE") throw new Error("wasmmem: given vectors are written on little-endian hosts only");
    fs.writeFileSync(given, Buffer.from(vectors.buffer, vectors.byteOffset, vectors.byteLength));
  }
  const input = fs.openSync(texts, "r");
  const output = fs.openSync(out, "w");
  try {
    const args = ["--model", modelDir(), "--batch", String(FILL_BATCH), "--threads", String(os.availableParallelism())];
    execFileSync(FILL_STORE_BIN, givenVectors ? [...args, "--given-vectors", given] : args, { stdio: [input, output, "inherit"] });
  } finally {
    fs.closeSync(input);
    fs.closeSync(output);
    fs.rmSync(texts);
    fs.rmSync(given, { force: true });
  }
  const map = load(out);
  return { keys: map.size, bytes: [...map.values()].reduce((n, v) => n + v.length, 0) };
}

function readModel() {
  const dir = modelDir();
  return { onnx: fs.readFileSync(path.join(dir, "model.onnx")), tokenizer: fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8") };
}

async function open({ file, pkg, size, model }) {
  const { Memory, wasmMemoryBytes } = await import(path.join(pkg, "node.js"));
  const map = file ? load(file) : new Map();
  const files = model ? readModel() : undefined;
  const before = wasmMemoryBytes();
  const start = performance.now();
  const memory = await Memory.open({ storage: mapAdapter(map), ...(files ? { model: files } : {}) });
  const openMs = performance.now() - start;
  const afterOpen = wasmMemoryBytes();
  const { queries } = memoryCorpus(Math.max(size, 1), 1);
  const hits = await memory.retrieve({ text: queries[0].text, scope: SCOPE, limit: 10, dryRun: true });
  const afterAnswer = wasmMemoryBytes();
  const stats = await memory.stats();
  // With the model, the semantic near-duplicate gate merges a few of the
  // corpus's texts (13 of 10,000): the store holds the rest.
  const held = model ? stats.items >= 0.99 * size : stats.items === size;
  if (!held) throw new Error(`wasmmem: the store holds ${stats.items} memories of ${size} ingested`);
  if (size > 0 && hits.length === 0) throw new Error("wasmmem: the query found nothing");
  if (model && (stats.embedded !== stats.items || stats.retrievalMode !== "hybrid")) {
    throw new Error(`wasmmem: ${stats.embedded} of ${stats.items} memories embedded, retrieval ${stats.retrievalMode}`);
  }
  return { before, afterOpen, afterAnswer, openMs, formatVersion: stats.formatVersion, items: stats.items, embedded: stats.embedded };
}

/**
 * Lexical-only by default; `model: "embed"` measures stores whose memories
 * are embedded, opened with the model, and the empty store with the model
 * (`base`): per 10,000 memories is the growth above it; `model: "given"`
 * the same with the corpus's vectors stored under the model's id.
 */
export function runWasmMemory({ sizes, before, log, current = PACKAGE_DIR, model = false }) {
  const packages = [{ name: "current", pkg: current }];
  if (before) packages.push({ name: "before", pkg: path.resolve(before) });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "memtide-bench-wasmmem-"));
  const script = fileURLToPath(import.meta.url);
  const mode = model ? ["--model", "1"] : [];
  const results = { sizes, model, packages: {} };
  try {
    // One fill per size with the model (natively, the same for every
    // package); lexical-only, each package fills its own.
    const shared = {};
    for (const { name, pkg } of packages) {
      const base = model ? runNodeChild(script, ["--mode", "open", "--size", 0, "--pkg", pkg, ...mode]) : null;
      results.packages[name] = { pkg, base, sizes: {} };
      for (const size of sizes) {
        let file = shared[size]?.file ?? path.join(work, `${name}-${size}.jsonl`);
        let filled = shared[size]?.filled;
        if (!filled) {
          log(`wasmmem: ${model ? "" : `${name}: `}filling ${size} memories${model ? ` natively (${model})` : ""}`);
          filled = model
            ? fillWithModel({ size, out: file, givenVectors: model === "given" })
            : runNodeChild(script, ["--mode", "fill", "--size", size, "--out", file, "--pkg", pkg]);
          if (model) shared[size] = { file, filled };
        }
        const opened = runNodeChild(script, ["--mode", "open", "--size", size, "--file", file, "--pkg", pkg, ...mode]);
        const growth = opened.afterAnswer - opened.before;
        const stored = base ? opened.afterAnswer - base.afterAnswer : growth;
        log(`wasmmem: ${name} ${size}${model ? " with the model" : ""}: ${(growth / MIB).toFixed(1)} MiB after open + answer (format ${opened.formatVersion})`);
        results.packages[name].sizes[size] = { ...filled, ...opened, growth, per10k: stored / (size / 10000) };
        if (!model) fs.rmSync(file);
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
  else if (args.mode === "open") console.log(JSON.stringify(await open({ file: args.file, pkg, size: args.size, model: Boolean(args.model) })));
  else {
    // Standalone: node bench/sections/wasmmem.mjs --sizes 10000,100000 [--pkg DIR] [--before DIR] [--model embed|given]
    // (with the model: cargo build --release --example fill_store first)
    const sizes = String(args.sizes ?? "10000").split(",").map(Number);
    const model = args.model ?? false;
    console.log(JSON.stringify(runWasmMemory({ sizes, before: args.before, current: pkg, model, log: (m) => console.error(m) })));
  }
}
