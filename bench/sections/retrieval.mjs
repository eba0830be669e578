// Section 2, retrieval: at each size, each engine indexes the same
// synthetic corpus (lib/corpus.mjs) in its own child process, then answers
// the same queries with a precomputed query vector (query embedding
// excluded). Latency p50/p95 per query after warm-up; recall@10 against the
// exact (brute-force cosine) top 10; build time; memory per 10k memories.
import { fileURLToPath } from "node:url";
import { isMain, parseArgs, runNodeChild } from "../lib/child.mjs";
import { exactTopK, memoryCorpus, recall } from "../lib/corpus.mjs";
import { collectGarbage, median, percentile } from "../lib/stats.mjs";

const K = 10;
export const ENGINE_NAMES = ["memtide", "orama", "hnswlib"];

/** One engine at one size, in this process. */
async function measure({ engine, size, queries, warmup }) {
  const { ENGINES } = await import("../lib/engines.mjs");
  const corpus = memoryCorpus(size, queries);
  const truth = corpus.queries.map((q) => exactTopK(corpus.vectors, q.vector, K));
  const instance = await ENGINES[engine]();
  collectGarbage();
  const before = instance.memoryBytes();
  let start = performance.now();
  await instance.build(corpus);
  const buildMs = performance.now() - start;
  collectGarbage();
  const bytes = instance.memoryBytes() - before;
  for (let i = 0; i < warmup; i++) await instance.search(corpus.queries[i % queries], K);
  const latencies = [];
  let recallSum = 0;
  for (const [i, query] of corpus.queries.entries()) {
    start = performance.now();
    const found = await instance.search(query, K);
    latencies.push(performance.now() - start);
    recallSum += recall(found, truth[i]);
  }
  return {
    engine: instance.label,
    size,
    buildMs,
    bytesPer10k: (bytes * 10_000) / size,
    p50: median(latencies),
    p95: percentile(latencies, 95),
    recall: recallSum / queries,
  };
}

/** The section: every engine at every size, each in a fresh process. */
export function runRetrieval({ sizes, queries, engines = ENGINE_NAMES, log }) {
  const results = [];
  for (const size of sizes) {
    for (const engine of engines) {
      log(`retrieval: ${engine} at ${size} memories`);
      results.push(runNodeChild(fileURLToPath(import.meta.url),
        ["--engine", engine, "--size", size, "--queries", queries, "--warmup", Math.max(5, queries / 10)]));
    }
  }
  return results;
}

if (isMain(import.meta.url)) {
  console.log(JSON.stringify(await measure(parseArgs(process.argv.slice(2)))));
}
