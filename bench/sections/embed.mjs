// Section 1, embedding: memtide's MiniLM (tract, wasm) against
// transformers.js on onnxruntime-web (wasm), both on the same int8 ONNX
// file, same inputs, mean pooling and L2 normalization, one thread each;
// and natively memtide (tract, the bench_embed example) against
// transformers.js on onnxruntime-node. Each runtime runs in its own
// process: model load time (median of several loads), latency of one
// 16- and one 128-token text, throughput over 500 sentences (the default)
// in batches of 32, the memory after loading, and the embeddings of the agreement
// sentences (cosine between the two sides).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isMain, parseArgs, runNodeChild } from "../lib/child.mjs";
import { sentences, textOfTokens } from "../lib/corpus.mjs";
import { BUILD_DIR, NATIVE_EMBED_BIN, modelDir } from "../lib/paths.mjs";
import { collectGarbage, cosine, median, sampleMs } from "../lib/stats.mjs";

export const TOKEN_LENGTHS = [16, 128];
const BATCH = 32;
const AGREEMENT_SENTENCES = 50;
const LATENCY_WARMUP = 3;

/** The inputs and repetition counts every runtime gets. */
function request({ runs, loads, throughputRuns, sentenceCount }) {
  const corpus = sentences(sentenceCount);
  return {
    modelDir: modelDir(),
    loadRuns: loads,
    warmup: LATENCY_WARMUP,
    runs,
    latencyTexts: TOKEN_LENGTHS.map(textOfTokens),
    sentences: corpus,
    batch: BATCH,
    throughputRuns,
    agreement: corpus.slice(0, AGREEMENT_SENTENCES),
  };
}

const chunks = (list, size) => Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, (i + 1) * size));

/** The two in-process runtimes: load a model, embed a batch (rows of numbers). */
const RUNTIMES = {
  async "memtide-wasm"(dir) {
    const { BenchEmbedder, memoryBytes } = await import("../lib/memtide-wasm.mjs");
    const onnx = fs.readFileSync(path.join(dir, "model.onnx"));
    const tokenizer = fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8");
    return {
      memoryBytes,
      load: () => new BenchEmbedder(onnx, tokenizer),
      embed(model, texts) {
        const flat = model.embed(texts);
        const width = flat.length / texts.length;
        return texts.map((_, i) => flat.subarray(i * width, (i + 1) * width));
      },
      check(model, texts) {
        TOKEN_LENGTHS.forEach((tokens, i) => {
          if (model.tokens(texts[i]) !== tokens) throw new Error(`the ${tokens}-token text has ${model.tokens(texts[i])} tokens`);
        });
      },
    };
  },
  "transformers-wasm": (dir) => transformersRuntime("wasm", dir),
  "transformers-node": (dir) => transformersRuntime("node", dir),
};

async function transformersRuntime(backend, dir) {
  const { loadTransformers, POOLING } = await import("../lib/transformers.mjs");
  const transformers = await loadTransformers(backend);
  return {
    memoryBytes: () => { const m = process.memoryUsage(); return m.heapUsed + m.external; },
    load: () => transformers.pipeline(dir),
    async embed(pipe, texts) {
      const output = await pipe(texts, POOLING);
      return output.tolist();
    },
    check() {},
  };
}

/** One runtime in this process: the same answer shape as bench_embed. */
async function measure(runtimeName, req) {
  const runtime = await RUNTIMES[runtimeName](req.modelDir);
  collectGarbage();
  const before = runtime.memoryBytes();
  let model;
  const loadMs = [];
  for (let i = 0; i < req.loadRuns; i++) {
    model = null;
    collectGarbage();
    const start = performance.now();
    model = await runtime.load();
    loadMs.push(performance.now() - start);
  }
  collectGarbage();
  const memoryAfterLoad = runtime.memoryBytes() - before;
  runtime.check(model, req.latencyTexts);
  const latencyMs = [];
  for (const text of req.latencyTexts) {
    latencyMs.push(await sampleMs(() => runtime.embed(model, [text]), { warmup: req.warmup, runs: req.runs }));
  }
  const throughputMs = await sampleMs(async () => {
    for (const chunk of chunks(req.sentences, req.batch)) await runtime.embed(model, chunk);
  }, { warmup: 1, runs: req.throughputRuns });
  const embeddings = (await runtime.embed(model, req.agreement)).map((row) => Array.from(row));
  return { loadMs, latencyMs, throughputMs, embeddings, memoryAfterLoad };
}

function writeRequest(req) {
  fs.mkdirSync(BUILD_DIR, { recursive: true });
  const file = path.join(BUILD_DIR, "embed-request.json");
  fs.writeFileSync(file, JSON.stringify(req));
  return file;
}

function nativeMemtide(req) {
  const stdout = execFileSync(NATIVE_EMBED_BIN, [writeRequest(req)], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "inherit"] });
  return JSON.parse(stdout);
}

/** Medians and agreement of one memtide/peer pair. */
function summarize(memtide, peer, sentenceCount) {
  const side = (r) => ({
    loadMs: median(r.loadMs),
    latencyMs: Object.fromEntries(TOKEN_LENGTHS.map((t, i) => [t, median(r.latencyMs[i])])),
    sentencesPerSecond: sentenceCount / (median(r.throughputMs) / 1000),
    memoryAfterLoad: r.memoryAfterLoad,
  });
  // Agreement only means something if different sentences differ.
  if (cosine(memtide.embeddings[0], memtide.embeddings[1]) > 0.999) throw new Error("degenerate embeddings");
  const cosines = memtide.embeddings.map((row, i) => cosine(row, peer.embeddings[i]));
  return { memtide: side(memtide), peer: side(peer), cosineMin: Math.min(...cosines), cosineMean: cosines.reduce((a, b) => a + b, 0) / cosines.length };
}

/** The section: wasm pair and native pair. */
export function runEmbed({ runs, loads, throughputRuns, sentenceCount, log }) {
  const req = request({ runs, loads, throughputRuns, sentenceCount });
  const requestFile = writeRequest(req);
  const child = (runtime) => {
    log(`embedding: ${runtime}`);
    return runNodeChild(fileURLToPath(import.meta.url), ["--runtime", runtime, "--request", requestFile]);
  };
  const wasm = summarize(child("memtide-wasm"), child("transformers-wasm"), req.sentences.length);
  log("embedding: memtide native (bench_embed)");
  const native = summarize(nativeMemtide(req), child("transformers-node"), req.sentences.length);
  return { wasm, native, sentences: req.sentences.length, batch: BATCH, runs, loads, throughputRuns };
}

if (isMain(import.meta.url)) {
  const args = parseArgs(process.argv.slice(2));
  const req = JSON.parse(fs.readFileSync(args.request, "utf8"));
  console.log(JSON.stringify(await measure(args.runtime, req)));
}
