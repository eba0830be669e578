// The ratio table (printed, and kept in docs/benchmarks.md): one row per
// figure with memtide's value, the peer's, memtide ÷ peer, and the issue's
// target where it has one.
import { MIB } from "./stats.mjs";

const ms = (v) => (v == null ? "–" : v < 10 ? `${v.toFixed(2)} ms` : `${v.toFixed(0)} ms`);
const mib = (v) => (v == null ? "–" : `${(v / MIB).toFixed(1)} MiB`);
const num = (digits, unit = "") => (v) => (v == null ? "–" : `${v.toFixed(digits)}${unit}`);
const ratio = (a, b) => (a == null || b == null || b === 0 ? null : a / b);
const met = (ok) => (ok ? "met" : "**missed**");

/** A row: figure, peer name, values, formatter, direction ("lower"/"higher" is better), target. */
function row(figure, peer, memtide, other, format, better, target = "", status = "") {
  const r = ratio(memtide, other);
  return { figure, peer, memtide: format(memtide), other: format(other), ratio: r == null ? "–" : `${r.toFixed(2)}× (${better} better)`, target, status };
}

function embedRows({ wasm, native }) {
  const rows = [];
  for (const [label, pair, peer] of [["wasm", wasm, "transformers.js (onnxruntime-web, wasm)"], ["native", native, "transformers.js (onnxruntime-node)"]]) {
    rows.push(row(`embedding ${label}: model load`, peer, pair.memtide.loadMs, pair.peer.loadMs, ms, "lower"));
    for (const tokens of Object.keys(pair.memtide.latencyMs)) {
      const r = ratio(pair.memtide.latencyMs[tokens], pair.peer.latencyMs[tokens]);
      rows.push(row(`embedding ${label}: ${tokens} tokens`, peer, pair.memtide.latencyMs[tokens], pair.peer.latencyMs[tokens], ms, "lower",
        label === "wasm" ? "ratio ≤ 1.0" : "", label === "wasm" ? met(r <= 1) : ""));
    }
    rows.push(row(`embedding ${label}: throughput`, peer, pair.memtide.sentencesPerSecond, pair.peer.sentencesPerSecond, num(1, " sent/s"), "higher"));
    rows.push({ figure: `embedding ${label}: cosine agreement (min / mean)`, peer, memtide: `${pair.cosineMin.toFixed(6)} / ${pair.cosineMean.toFixed(6)}`, other: "", ratio: "", target: "", status: "" });
  }
  return rows;
}

function retrievalRows(results) {
  const rows = [];
  const sizes = [...new Set(results.map((r) => r.size))];
  const TARGET_P50 = { 10000: 2, 100000: 10 };
  for (const size of sizes) {
    const of = (prefix) => results.find((r) => r.size === size && r.engine.startsWith(prefix));
    const [memtide, orama, hnsw] = [of("memtide"), of("Orama"), of("hnswlib")];
    if (!memtide) continue;
    const n = size.toLocaleString("en");
    if (orama) {
      const faster = ratio(memtide.p50, orama.p50) <= 0.5 && memtide.recall >= orama.recall;
      const p50Target = TARGET_P50[size];
      rows.push(row(`retrieval ${n}: p50`, "Orama hybrid", memtide.p50, orama.p50, ms, "lower",
        `${p50Target ? `≤ ${p50Target} ms; ` : ""}≥ 2× faster at ≥ recall`,
        `${p50Target ? `${met(memtide.p50 <= p50Target)} (abs); ` : ""}${met(faster)} (vs Orama)`));
      rows.push(row(`retrieval ${n}: p95`, "Orama hybrid", memtide.p95, orama.p95, ms, "lower"));
      rows.push(row(`retrieval ${n}: recall@10`, "Orama hybrid", memtide.recall, orama.recall, num(3), "higher"));
      rows.push(row(`retrieval ${n}: index build`, "Orama hybrid", memtide.buildMs, orama.buildMs, ms, "lower"));
      // Below 10k the wasm memory grows in steps larger than the store.
      if (size >= 10_000) rows.push(row(`retrieval ${n}: memory per 10k`, "Orama hybrid", memtide.bytesPer10k, orama.bytesPer10k, mib, "lower"));
    }
    if (hnsw) {
      rows.push(row(`retrieval ${n}: p50`, "hnswlib-wasm (vector only)", memtide.p50, hnsw.p50, ms, "lower"));
      rows.push(row(`retrieval ${n}: recall@10`, "hnswlib-wasm (vector only)", memtide.recall, hnsw.recall, num(3), "higher"));
      rows.push(row(`retrieval ${n}: index build`, "hnswlib-wasm (vector only)", memtide.buildMs, hnsw.buildMs, ms, "lower"));
      if (size >= 10_000) rows.push(row(`retrieval ${n}: memory per 10k`, "hnswlib-wasm (vector only)", memtide.bytesPer10k, hnsw.bytesPer10k, mib, "lower"));
    }
  }
  return rows;
}

function lexicalRows(results) {
  const [memtide, mini] = ["memtide", "minisearch"].map((e) => results.find((r) => r.engine === e));
  const n = memtide.size.toLocaleString("en");
  return [
    row(`lexical ${n}: index build`, "MiniSearch", memtide.buildMs, mini.buildMs, ms, "lower"),
    row(`lexical ${n}: query p50`, "MiniSearch", memtide.p50, mini.p50, ms, "lower"),
    row(`lexical ${n}: query p95`, "MiniSearch", memtide.p95, mini.p95, ms, "lower"),
  ];
}

function coldRows(cold) {
  const n = cold.size.toLocaleString("en");
  return [row(`cold start ${n} (IndexedDB, Chromium): page load → first answer`, "Orama + saved index in IndexedDB", cold.memtide.ms, cold.orama.ms, ms, "lower")];
}

function footprintRows(footprint, retrieval) {
  const { memtideWasm, ortWasm, model } = footprint;
  const rows = [
    row(".wasm raw (no model)", "onnxruntime-web .wasm", memtideWasm.raw, ortWasm.raw, mib, "lower"),
    row(".wasm gzipped (no model)", "onnxruntime-web .wasm", memtideWasm.gzip, ortWasm.gzip, mib, "lower", "≤ 3 MB", met(memtideWasm.gzip <= 3e6)),
    { figure: "wasm memory after loading the model (npm package)", peer: "", memtide: mib(model.afterLoad), other: "", ratio: "", target: "", status: "" },
  ];
  const largest = retrieval?.filter((r) => r.engine.startsWith("memtide")).sort((a, b) => b.size - a.size)[0];
  if (largest) {
    const total = model.afterLoad + (largest.bytesPer10k * 100_000) / 10_000;
    rows.push({ figure: `model + 100,000 memories (model + 10 × per-10k at ${largest.size.toLocaleString("en")})`, peer: "",
      memtide: mib(total), other: "", ratio: "", target: "≤ 128 MB", status: met(total <= 128 * MIB) });
  }
  return rows;
}

/** Every row of the results present. */
export function tableRows(results) {
  return [
    ...(results.embed ? embedRows(results.embed) : []),
    ...(results.retrieval ? retrievalRows(results.retrieval) : []),
    ...(results.lexical ? lexicalRows(results.lexical) : []),
    ...(results.cold ? coldRows(results.cold) : []),
    ...(results.footprint ? footprintRows(results.footprint, results.retrieval) : []),
  ];
}

const COLUMNS = ["figure", "peer", "memtide", "other", "ratio", "target", "status"];
const HEADERS = ["figure", "peer", "memtide", "peer value", "memtide ÷ peer", "target", "met?"];

export function markdownTable(rows) {
  const line = (cells) => `| ${cells.join(" | ")} |`;
  return [line(HEADERS), line(HEADERS.map(() => "---")), ...rows.map((r) => line(COLUMNS.map((c) => r[c])))].join("\n");
}
