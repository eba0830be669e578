// Section 3, lexical: memtide lexical-only (the npm package without a model:
// BM25 plus its thread signals) against MiniSearch on the same texts. Index
// build time: memtide's `ingest` (which also deduplicates and writes its
// records to in-memory storage) against MiniSearch's `addAll`, median of
// builds, with memtide's time per batch of 1,000 as the store grows;
// query p50/p95 after warm-up. MiniSearch drops memtide's stopwords.
import { fileURLToPath } from "node:url";
import path from "node:path";
import MiniSearch from "minisearch";
import { isMain, parseArgs, runNodeChild } from "../lib/child.mjs";
import { memoryCorpus } from "../lib/corpus.mjs";
import { STOPWORDS } from "../lib/stopwords.mjs";
import { PACKAGE_DIR } from "../lib/paths.mjs";
import { median, percentile, sampleMs } from "../lib/stats.mjs";

const LIMIT = 10;
/** Memories per ingest call (the package's limit is 10,000). */
const INGEST_BATCH = 1000;
const SCOPE = { userId: "bench", workspaceId: "main" };
const STOP = new Set(STOPWORDS);

const ENGINES = {
  async memtide(pkg = PACKAGE_DIR) {
    const { Memory } = await import(path.join(pkg, "node.js"));
    let memory;
    return {
      async build(texts) {
        await memory?.close();
        memory = await Memory.open({ storage: "memory" });
        this.batchMs = [];
        for (let i = 0; i < texts.length; i += INGEST_BATCH) {
          const start = performance.now();
          await memory.ingest(texts.slice(i, i + INGEST_BATCH).map((text) => ({ text, scope: SCOPE })));
          this.batchMs.push(performance.now() - start);
        }
      },
      search: (text) => memory.retrieve({ text, scope: SCOPE, limit: LIMIT, dryRun: true }),
    };
  },
  async minisearch() {
    let index;
    return {
      build(texts) {
        index = new MiniSearch({
          fields: ["text"],
          storeFields: [],
          processTerm: (term) => (STOP.has(term.toLowerCase()) ? null : term.toLowerCase()),
        });
        index.addAll(texts.map((text, id) => ({ id, text })));
      },
      search: (text) => index.search(text).slice(0, LIMIT),
    };
  },
};

async function measure({ engine, size, queries, builds, pkg }) {
  const corpus = memoryCorpus(size, queries);
  const instance = await ENGINES[engine](pkg && path.resolve(pkg));
  const cpuBefore = process.cpuUsage();
  const buildMs = await sampleMs(() => instance.build(corpus.texts), { warmup: 0, runs: builds });
  const cpu = process.cpuUsage(cpuBefore);
  // CPU time of the process (user + system) per build: the figure that
  // load on a shared machine inflates least.
  const buildCpuMs = (cpu.user + cpu.system) / 1000 / builds;
  const latencies = await sampleMs((i) => instance.search(corpus.queries[i % queries].text),
    { warmup: Math.max(5, queries / 10), runs: queries });
  // How a batch's time grows with the store (last build, wall, memtide
  // only): the median batch of each tenth of the build.
  const tenths = instance.batchMs && Array.from({ length: 10 }, (_, t) => {
    const batches = instance.batchMs.slice(Math.floor(t * instance.batchMs.length / 10),
      Math.max(Math.floor((t + 1) * instance.batchMs.length / 10), Math.floor(t * instance.batchMs.length / 10) + 1));
    return Math.round(median(batches));
  });
  return { engine, size, pkg, buildMs: median(buildMs), buildRangeMs: [Math.min(...buildMs), Math.max(...buildMs)],
    buildCpuMs, batchMsByTenth: tenths, p50: median(latencies), p95: percentile(latencies, 95) };
}

export function runLexical({ size, queries, builds, log }) {
  return Object.keys(ENGINES).map((engine) => {
    log(`lexical: ${engine} at ${size} memories`);
    return runNodeChild(fileURLToPath(import.meta.url), ["--engine", engine, "--size", size, "--queries", queries, "--builds", builds]);
  });
}

// Standalone, one engine at one size (JSON): node bench/sections/lexical.mjs
// --engine memtide|minisearch --size N --queries Q --builds B [--pkg DIR]
// (--pkg: another build of the package, e.g. an older one, for memtide).
if (isMain(import.meta.url)) {
  console.log(JSON.stringify(await measure(parseArgs(process.argv.slice(2)))));
}
