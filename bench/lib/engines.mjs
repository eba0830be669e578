// The retrieval engines behind one interface: `build(corpus)` indexes the
// texts and vectors, `search(query, k)` returns corpus indices best first,
// `memoryBytes()` what the engine holds (memtide: its wasm linear memory; the
// JavaScript peers: V8 heap plus external memory).
import { create, insertMultiple, search } from "@orama/orama";
import { DIMENSIONS, row } from "./corpus.mjs";
import { STOPWORDS } from "./stopwords.mjs";
import { BenchStore, memoryBytes as wasmBytes } from "./memtide-wasm.mjs";

/** Memories ingested per memtide call (its limit is 10,000). */
const MEMTIDE_BATCH = 1000;
/** One hour: more than memtide's 30-minute thread gap, so no memory follows another. */
const HOUR_MS = 3_600_000;
/** memtide's fused score weights BM25 0.4 and the cosine 0.6 (RankParams); Orama gets the same. */
const HYBRID_WEIGHTS = { text: 0.4, vector: 0.6 };
/** hnswlib parameters: its usual defaults for M and efConstruction, efSearch for recall ≥ 0.95. */
const HNSW = { m: 16, efConstruction: 200, efSearch: 64, seed: 100 };

const jsHeapBytes = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};

export const ENGINES = {
  memtide: () => {
    const store = new BenchStore();
    const indexOf = new Map();
    return {
      label: "memtide hybrid (wasm)",
      build({ texts, vectors }) {
        for (let start = 0; start < texts.length; start += MEMTIDE_BATCH) {
          const end = Math.min(texts.length, start + MEMTIDE_BATCH);
          const ids = store.ingest(texts.slice(start, end), vectors.subarray(start * DIMENSIONS, end * DIMENSIONS),
            (texts.length - start) * HOUR_MS, HOUR_MS);
          ids.forEach((id, j) => {
            if (!id) throw new Error(`memtide did not add memory ${start + j}`);
            indexOf.set(id, start + j);
          });
        }
      },
      search: (query, k) => store.search(query.text, query.vector, k).map((id) => indexOf.get(id)),
      memoryBytes: wasmBytes,
    };
  },

  orama: () => {
    const db = create({
      schema: { text: "string", embedding: `vector[${DIMENSIONS}]` },
      components: { tokenizer: { stopWords: STOPWORDS } },
    });
    return {
      label: "Orama hybrid",
      async build({ texts, vectors }) {
        const docs = texts.map((text, i) => ({ id: String(i), text, embedding: Array.from(row(vectors, i)) }));
        await insertMultiple(db, docs, 1000);
      },
      search: (query, k) => {
        const result = search(db, {
          mode: "hybrid",
          term: query.text,
          vector: { value: Array.from(query.vector), property: "embedding" },
          similarity: 0,
          hybridWeights: HYBRID_WEIGHTS,
          limit: k,
        });
        return result.hits.map((hit) => Number(hit.id));
      },
      memoryBytes: jsHeapBytes,
    };
  },

  hnswlib: async () => {
    globalThis.importScripts ??= () => {}; // its Emscripten build only accepts web and worker globals
    const { loadHnswlib } = await import("hnswlib-wasm/dist/hnswlib.js");
    const lib = await loadHnswlib(); // its IndexedDB file system fails to sync in Node (logged); not used
    const index = new lib.HierarchicalNSW("cosine", DIMENSIONS, "");
    return {
      label: "hnswlib-wasm (vector only)",
      build({ vectors }) {
        const count = vectors.length / DIMENSIONS;
        index.initIndex(count, HNSW.m, HNSW.efConstruction, HNSW.seed);
        index.setEfSearch(HNSW.efSearch);
        const batch = 5000;
        for (let start = 0; start < count; start += batch) {
          const end = Math.min(count, start + batch);
          const items = [], labels = [];
          for (let i = start; i < end; i++) {
            items.push(row(vectors, i));
            labels.push(i);
          }
          index.addPoints(items, labels, false);
        }
      },
      search: (query, k) => index.searchKnn(query.vector, k, undefined).neighbors,
      memoryBytes: jsHeapBytes, // V8 counts its wasm memory as external
    };
  },
};
