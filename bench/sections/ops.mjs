// Section 7, storage operations (issue 21): what opening a store and
// answering one query, and what a single ingest, cost in storage
// operations through a key-value adapter without `batch` (get, put,
// delete, list: how a Worker over Workers KV uses `memtide/cloudflare-kv`),
// through the built npm package (dist/memtide, `node.js`) in Node. The
// adapter is a Map behind a wrapper that counts every call (and the keys a
// `list` returns, and the bytes read and written); the counts are exact,
// not timings. Each size runs in a fresh process:
//
// - fill: the store gets `size` memories in ingests of 1,000 (counted and
//   reported, not a target);
// - open + answer: a new `Memory.open` over the same Map, then one
//   `retrieve` (default: it marks the hits used, which is a write) and,
//   over another fresh open, one `retrieve` with `dryRun` (reads only);
// - single ingests: `singles` ingests of one memory each, one after the
//   other, onto an empty store and onto the filled one, averaged.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isMain, parseArgs, runNodeChild } from "../lib/child.mjs";
import fs from "node:fs";
import { PACKAGE_DIR, modelDir } from "../lib/paths.mjs";
import { memoryCorpus } from "../lib/corpus.mjs";

const SCOPE = { userId: "bench", workspaceId: "main" };
const FILL_BATCH = 1000;
/** Keys a Workers KV `list` returns per call (https://developers.cloudflare.com/kv/api/list-keys/). */
const KV_LIST_PAGE = 1000;

/** A Map-backed adapter without `batch`, counting what is asked of it. */
function countingKv(map = new Map()) {
  const c = { get: 0, put: 0, delete: 0, list: 0, listPages: 0, listedKeys: 0, bytesRead: 0, bytesWritten: 0 };
  const adapter = {
    async get(key) {
      c.get++;
      const value = map.get(key);
      if (value === undefined) return null;
      c.bytesRead += value.length;
      return value.slice();
    },
    async put(key, value) {
      c.put++;
      c.bytesWritten += value.length;
      map.set(key, value.slice());
    },
    async delete(key) {
      c.delete++;
      map.delete(key);
    },
    async list(prefix) {
      const keys = [...map.keys()].filter((k) => k.startsWith(prefix)).sort();
      c.list++;
      c.listPages += Math.max(1, Math.ceil(keys.length / KV_LIST_PAGE));
      c.listedKeys += keys.length;
      return keys;
    },
  };
  const snapshot = () => ({ ...c, ops: c.get + c.put + c.delete + c.list });
  const since = (before) => {
    const now = snapshot();
    return Object.fromEntries(Object.keys(now).map((k) => [k, now[k] - before[k]]));
  };
  return { adapter, map, snapshot, since };
}

/** Keys by prefix and the largest value in the Map. */
function shape(map) {
  const keys = {};
  let largest = 0;
  let bytes = 0;
  for (const [key, value] of map) {
    const prefix = key.split("/")[0];
    keys[prefix] = (keys[prefix] ?? 0) + 1;
    largest = Math.max(largest, value.length);
    bytes += value.length;
  }
  return { keys, largest, bytes };
}

/** One size in this process: fill, open + answer, single ingests. */
async function measure({ size, singles, model: withModel }) {
  const { Memory: Package } = await import(path.join(PACKAGE_DIR, "node.js"));
  // With `--model 1`, every open loads the model: each memory gets its vector record too.
  let model;
  if (withModel) {
    const dir = modelDir();
    model = { onnx: fs.readFileSync(path.join(dir, "model.onnx")), tokenizer: fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8") };
  }
  const Memory = { open: (options) => Package.open(model ? { ...options, model } : options) };
  const { texts, queries } = memoryCorpus(size + 2 * singles, 1);
  const query = { text: queries[0].text, scope: SCOPE, limit: 10 };
  const kv = countingKv();
  const result = { size, singles, model: Boolean(withModel) };

  let start = kv.snapshot();
  let mem = await Memory.open({ storage: kv.adapter });
  for (let i = 0; i < size; i += FILL_BATCH) {
    await mem.ingest(texts.slice(i, Math.min(size, i + FILL_BATCH)).map((text) => ({ text, scope: SCOPE })));
  }
  // With the model, ingest merges a few near-duplicates of the synthetic texts.
  result.items = (await mem.stats()).items;
  if (model ? result.items < 0.99 * size : result.items !== size) throw new Error(`ops: the store holds ${result.items} memories, not ${size}`);
  await mem.close();
  result.fill = { ...kv.since(start), batches: Math.ceil(size / FILL_BATCH) };
  result.afterFill = shape(kv.map);

  for (const [name, dryRun] of [["openAnswerDry", true], ["openAnswer", false]]) {
    start = kv.snapshot();
    const t0 = performance.now();
    mem = await Memory.open({ storage: kv.adapter });
    const hits = await mem.retrieve({ ...query, dryRun });
    const ms = performance.now() - t0;
    if (hits.length === 0) throw new Error("ops: the query found nothing");
    result[name] = { ...kv.since(start), hits: hits.length, ms };
    await mem.close();
  }

  // Single ingests onto the filled store (its log and merges at this size).
  mem = await Memory.open({ storage: kv.adapter });
  start = kv.snapshot();
  for (let i = 0; i < singles; i++) await mem.ingest({ text: texts[size + i], scope: SCOPE });
  result.singlesOnFilled = kv.since(start);
  await mem.close();
  result.afterSingles = shape(kv.map);

  // Single ingests onto an empty store.
  const empty = countingKv();
  mem = await Memory.open({ storage: empty.adapter });
  start = empty.snapshot();
  for (let i = 0; i < singles; i++) await mem.ingest({ text: texts[size + singles + i], scope: SCOPE });
  result.singlesOnEmpty = empty.since(start);
  await mem.close();
  result.afterEmptySingles = shape(empty.map);
  return result;
}

/**
 * Each size lexical-only (no model); with `modelSize`, that size once more
 * with the model (vector records too; slow: every memory is embedded).
 */
export function runOps({ sizes, singles, modelSize, log }) {
  const results = [];
  const runs = sizes.map((size) => [size, 0]);
  if (modelSize) runs.push([modelSize, 1]);
  for (const [size, model] of runs) {
    log(`ops: ${size} memories${model ? " with the model" : ""}, ${singles} single ingests (storage operations through a KV adapter without batch)`);
    results.push(runNodeChild(fileURLToPath(import.meta.url), ["--size", size, "--singles", singles, "--model", model]));
  }
  return { results };
}

if (isMain(import.meta.url)) {
  console.log(JSON.stringify(await measure(parseArgs(process.argv.slice(2)))));
}
