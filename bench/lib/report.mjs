// The ratio table (printed, and kept in docs/benchmarks.md): one row per
// figure with mnemo's value, the peer's, mnemo ÷ peer, and the issue's
// target where it has one.
import { MIB } from "./stats.mjs";

const ms = (v) => (v == null ? "–" : v < 10 ? `${v.toFixed(2)} ms` : `${v.toFixed(0)} ms`);
const mib = (v) => (v == null ? "–" : `${(v / MIB).toFixed(1)} MiB`);
const num = (digits, unit = "") => (v) => (v == null ? "–" : `${v.toFixed(digits)}${unit}`);
const ratio = (a, b) => (a == null || b == null || b === 0 ? null : a / b);
const met = (ok) => (ok ? "met" : "**missed**");

/** A row: figure, peer name, values, formatter, direction ("lower"/"higher" is better), target. */
function row(figure, peer, mnemo, other, format, better, target = "", status = "") {
  const r = ratio(mnemo, other);
  return { figure, peer, mnemo: format(mnemo), other: format(other), ratio: r == null ? "–" : `${r.toFixed(2)}× (${better} better)`, target, status };
}

function embedRows({ wasm, native }) {
  const rows = [];
  for (const [label, pair, peer] of [["wasm", wasm, "transformers.js (onnxruntime-web, wasm)"], ["native", native, "transformers.js (onnxruntime-node)"]]) {
    rows.push(row(`embedding ${label}: model load`, peer, pair.mnemo.loadMs, pair.peer.loadMs, ms, "lower"));
    for (const tokens of Object.keys(pair.mnemo.latencyMs)) {
      const r = ratio(pair.mnemo.latencyMs[tokens], pair.peer.latencyMs[tokens]);
      rows.push(row(`embedding ${label}: ${tokens} tokens`, peer, pair.mnemo.latencyMs[tokens], pair.peer.latencyMs[tokens], ms, "lower",
        label === "wasm" ? "ratio ≤ 1.0" : "", label === "wasm" ? met(r <= 1) : ""));
    }
    rows.push(row(`embedding ${label}: throughput`, peer, pair.mnemo.sentencesPerSecond, pair.peer.sentencesPerSecond, num(1, " sent/s"), "higher"));
    rows.push({ figure: `embedding ${label}: cosine agreement (min / mean)`, peer, mnemo: `${pair.cosineMin.toFixed(6)} / ${pair.cosineMean.toFixed(6)}`, other: "", ratio: "", target: "", status: "" });
  }
  return rows;
}

function retrievalRows(results) {
  const rows = [];
  const sizes = [...new Set(results.map((r) => r.size))];
  const TARGET_P50 = { 10000: 2, 100000: 10 };
  for (const size of sizes) {
    const of = (prefix) => results.find((r) => r.size === size && r.engine.startsWith(prefix));
    const [mnemo, orama, hnsw] = [of("mnemo"), of("Orama"), of("hnswlib")];
    if (!mnemo) continue;
    const n = size.toLocaleString("en");
    if (orama) {
      const faster = ratio(mnemo.p50, orama.p50) <= 0.5 && mnemo.recall >= orama.recall;
      const p50Target = TARGET_P50[size];
      rows.push(row(`retrieval ${n}: p50`, "Orama hybrid", mnemo.p50, orama.p50, ms, "lower",
        `${p50Target ? `≤ ${p50Target} ms; ` : ""}≥ 2× faster at ≥ recall`,
        `${p50Target ? `${met(mnemo.p50 <= p50Target)} (abs); ` : ""}${met(faster)} (vs Orama)`));
      rows.push(row(`retrieval ${n}: p95`, "Orama hybrid", mnemo.p95, orama.p95, ms, "lower"));
      rows.push(row(`retrieval ${n}: recall@10`, "Orama hybrid", mnemo.recall, orama.recall, num(3), "higher"));
      rows.push(row(`retrieval ${n}: index build`, "Orama hybrid", mnemo.buildMs, orama.buildMs, ms, "lower"));
      // Below 10k the wasm memory grows in steps larger than the store.
      if (size >= 10_000) rows.push(row(`retrieval ${n}: memory per 10k`, "Orama hybrid", mnemo.bytesPer10k, orama.bytesPer10k, mib, "lower"));
    }
    if (hnsw) {
      rows.push(row(`retrieval ${n}: p50`, "hnswlib-wasm (vector only)", mnemo.p50, hnsw.p50, ms, "lower"));
      rows.push(row(`retrieval ${n}: recall@10`, "hnswlib-wasm (vector only)", mnemo.recall, hnsw.recall, num(3), "higher"));
      rows.push(row(`retrieval ${n}: index build`, "hnswlib-wasm (vector only)", mnemo.buildMs, hnsw.buildMs, ms, "lower"));
      if (size >= 10_000) rows.push(row(`retrieval ${n}: memory per 10k`, "hnswlib-wasm (vector only)", mnemo.bytesPer10k, hnsw.bytesPer10k, mib, "lower"));
    }
  }
  return rows;
}

function lexicalRows(results) {
  const [mnemo, mini] = ["mnemo", "minisearch"].map((e) => results.find((r) => r.engine === e));
  const n = mnemo.size.toLocaleString("en");
  return [
    row(`lexical ${n}: index build`, "MiniSearch", mnemo.buildMs, mini.buildMs, ms, "lower"),
    row(`lexical ${n}: query p50`, "MiniSearch", mnemo.p50, mini.p50, ms, "lower"),
    row(`lexical ${n}: query p95`, "MiniSearch", mnemo.p95, mini.p95, ms, "lower"),
  ];
}

function coldRows(cold) {
  const n = cold.size.toLocaleString("en");
  return [row(`cold start ${n} (IndexedDB, Chromium): page load → first answer`, "Orama + saved index in IndexedDB", cold.mnemo.ms, cold.orama.ms, ms, "lower")];
}

function footprintRows(footprint, retrieval) {
  const { mnemoWasm, ortWasm, model } = footprint;
  const rows = [
    row(".wasm raw (no model)", "onnxruntime-web .wasm", mnemoWasm.raw, ortWasm.raw, mib, "lower"),
    row(".wasm gzipped (no model)", "onnxruntime-web .wasm", mnemoWasm.gzip, ortWasm.gzip, mib, "lower", "≤ 3 MB", met(mnemoWasm.gzip <= 3e6)),
    { figure: "wasm memory after loading the model (npm package)", peer: "", mnemo: mib(model.afterLoad), other: "", ratio: "", target: "", status: "" },
  ];
  const largest = retrieval?.filter((r) => r.engine.startsWith("mnemo")).sort((a, b) => b.size - a.size)[0];
  if (largest) {
    const total = model.afterLoad + (largest.bytesPer10k * 100_000) / 10_000;
    rows.push({ figure: `model + 100,000 memories (model + 10 × per-10k at ${largest.size.toLocaleString("en")})`, peer: "",
      mnemo: mib(total), other: "", ratio: "", target: "≤ 128 MB", status: met(total <= 128 * MIB) });
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

const COLUMNS = ["figure", "peer", "mnemo", "other", "ratio", "target", "status"];
const HEADERS = ["figure", "peer", "mnemo", "peer value", "mnemo ÷ peer", "target", "met?"];

export function markdownTable(rows) {
  const line = (cells) => `| ${cells.join(" | ")} |`;
  return [line(HEADERS), line(HEADERS.map(() => "---")), ...rows.map((r) => line(COLUMNS.map((c) => r[c])))].join("\n");
}
