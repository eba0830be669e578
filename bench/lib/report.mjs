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

/** `v` formatted, with the range of `samples` after it when there are several. */
const withRange = (format, v, samples) =>
  v == null ? "–" : samples?.length > 1 ? `${format(v)} (${format(Math.min(...samples))}–${format(Math.max(...samples))})` : format(v);

function coldRows(cold) {
  const n = cold.size.toLocaleString("en");
  const r = row(`cold start ${n} (IndexedDB, Chromium): page load → first answer`, "Orama + saved index in IndexedDB", cold.memtide.ms, cold.orama.ms, ms, "lower");
  r.memtide = withRange(ms, cold.memtide.ms, cold.memtide.samples);
  r.other = withRange(ms, cold.orama.ms, cold.orama.samples);
  const rows = [r];
  // Runs of before 2026-11-26 have no stages.
  if (cold.memtide.breakdown && cold.orama.breakdown) {
    const stages = (b) => `${ms(b.script)} + ${ms(b.import)} + ${ms(b.compile)} + ${ms(b.open)} + ${ms(b.answer)}`;
    rows.push({ figure: `cold start ${n}: page → script + import + .wasm + open + answer (medians)`, peer: "Orama",
      memtide: stages(cold.memtide.breakdown), other: stages(cold.orama.breakdown), ratio: "", target: "", status: "" });
  }
  // Runs of before the second session of 2026-11-26 have no cache figures.
  const fromCache = cold.memtide.wasmFromCache;
  if (fromCache?.length) {
    const fetched = cold.memtide.breakdown.fetch;
    rows.push(plain(`cold start ${n}: memtide's .wasm from the HTTP cache; its response's end after the import; V8 code cache entries`,
      `${fromCache.filter(Boolean).length} of ${fromCache.length} visits; ${fetched === undefined ? "–" : ms(fetched)}; ${cold.memtide.wasmCodeCacheEntries}`));
  }
  // Runs of before the fifth session of 2026-11-26 have no traced visit.
  for (const [engine, label] of [["memtide", "memtide"], ["memtideBefore", "the earlier build"]]) {
    const w = cold[engine]?.wasm;
    if (!w) continue;
    const part = (p) => `${p.count} (${ms(p.ms)})`;
    rows.push(plain(`cold start ${n}: ${label}'s traced visit: lazy (baseline) compiles; memory.grow; optimizing compiles (background); code cache hit, writes`,
      `${part(w.lazyCompiles)}; ${part(w.memoryGrows)}; ${part(w.optimizingCompiles)}; ${w.codeCacheHit ? "hit" : "miss"}, ${w.codeCacheWrites}`));
  }
  // `--cold-before`: an earlier build of the package in the same run.
  const before = cold.memtideBefore;
  if (before) {
    const b = before.breakdown;
    const stages = `${ms(b.script)} + ${ms(b.import)} + ${ms(b.compile)} + ${ms(b.open)} + ${ms(b.answer)}`;
    rows.push(plain(`cold start ${n}: the earlier build (--cold-before): page load → first answer; stages as above`,
      `${withRange(ms, before.ms, before.samples)}; ${stages}; ${(before.ms / cold.orama.ms).toFixed(2)}× Orama`));
  }
  return rows;
}

const plain = (figure, memtide, target = "", status = "") => ({ figure, peer: "", memtide, other: "", ratio: "", target, status });
/** An operation count with its kinds: `n (get g, put p, delete d, list l)`. */
const opsText = (o) => `${o.ops} (get ${o.get}, put ${o.put}, delete ${o.delete}, list ${o.list}${o.listedKeys ? ` returning ${o.listedKeys} keys` : ""})`;
const kib = (v) => `${(v / 1024).toFixed(0)} KiB`;

function opsRows({ results }) {
  const rows = [];
  for (const r of results) {
    const n = r.size.toLocaleString("en") + (r.model ? " with the model" : "");
    const ten = r.size === 10_000;
    rows.push(plain(`ops ${n}: open + one answer (retrieve, marks hits used)`, opsText(r.openAnswer),
      ten ? "≤ 50" : "", ten ? met(r.openAnswer.ops <= 50) : ""));
    rows.push(plain(`ops ${n}: open + one answer (retrieve dryRun)`, opsText(r.openAnswerDry)));
    rows.push(plain(`ops ${n}: bytes read to open + answer`, kib(r.openAnswer.bytesRead)));
    rows.push(plain(`ops ${n}: fill in ingests of 1,000 (${r.fill.batches})`, opsText(r.fill)));
    const keys = Object.entries(r.afterFill.keys).map(([k, v]) => `${v} ${k}/`).join(", ");
    rows.push(plain(`ops ${n}: keys after the fill; largest value`, `${keys}; ${kib(r.afterFill.largest)}`));
    const singles = [[`onto the ${r.size.toLocaleString("en")}-memory store${r.model ? " with the model" : ""}`, r.singlesOnFilled]];
    // Every size's process measures the empty store alike: one row.
    if (r === results[0] || r.model) singles.push([`onto an empty store${r.model ? " with the model" : ""}`, r.singlesOnEmpty]);
    for (const [label, s] of singles) {
      const per = s.ops / r.singles;
      rows.push(plain(`ops: one ingest, mean of ${r.singles.toLocaleString("en")} single ingests ${label}`,
        `${per.toFixed(2)} (get ${(s.get / r.singles).toFixed(2)}, put ${(s.put / r.singles).toFixed(2)}, delete ${(s.delete / r.singles).toFixed(2)}, list ${(s.list / r.singles).toFixed(2)}); ${kib(s.bytesWritten / r.singles)} written each`,
        "≤ 4", met(per <= 4)));
    }
  }
  return rows;
}

function durableRows(d) {
  const n = d.size.toLocaleString("en");
  const f = (s) => withRange(ms, s.median, s.samples);
  return [
    plain(`Durable Object ${n} (workerd, miniflare): object start → first answer`, f(d.firstAnswer)),
    ...(d.firstAnswerCpu ? [plain(`Durable Object ${n}: workerd CPU time during that first answer`, f(d.firstAnswerCpu))] : []),
    plain("Durable Object, empty store: object start → first answer", f(d.emptyFirstAnswer)),
    plain(`Durable Object ${n}: second answer (object open)`, f(d.secondAnswer)),
    plain("Durable Object: workerd start (new Miniflare → ready)", f(d.workerdStart)),
  ];
}

function cliRows(c) {
  const n = c.size.toLocaleString("en");
  const rows = [];
  const peer = c.before ? "the build given as before" : "";
  const sec = (v) => (v == null ? "–" : `${v.toFixed(2)} s`);
  const mb = (v) => (v == null ? "–" : `${v.toFixed(0)} MiB`);
  const pair = (figure, pick, format) => {
    const now = pick(c.current);
    const was = c.before ? pick(c.before) : null;
    const r = row(figure, peer, now.median, was?.median, format, "lower");
    r.memtide = withRange(format, now.median, now.samples);
    r.other = was ? withRange(format, was.median, was.samples) : "";
    if (!c.before) r.ratio = "";
    return r;
  };
  // Older results have no CPU figure.
  const cpu = (pick) => (x) => pick(x)?.cpuSeconds ?? { median: null, samples: [] };
  rows.push(pair(`CLI ${n}: \`memtide stats\` (open), wall`, (x) => x.stats.seconds, sec));
  rows.push(pair(`CLI ${n}: \`memtide stats\` (open), CPU (user + sys)`, cpu((x) => x.stats), sec));
  rows.push(pair(`CLI ${n}: \`memtide stats\` (open), peak RSS`, (x) => x.stats.rssMiB, mb));
  rows.push(pair(`CLI ${n}: \`memtide retrieve\` (open + one answer), wall`, (x) => x.retrieve.seconds, sec));
  rows.push(pair(`CLI ${n}: \`memtide retrieve\` (open + one answer), CPU (user + sys)`, cpu((x) => x.retrieve), sec));
  rows.push(pair(`CLI ${n}: \`memtide retrieve\` (open + one answer), peak RSS`, (x) => x.retrieve.rssMiB, mb));
  const ingest = row(`CLI ${n}: \`memtide ingest\` of the store (once)`, peer, c.current.ingest.seconds, c.before?.ingest.seconds, sec, "lower");
  if (!c.before) { ingest.other = ""; ingest.ratio = ""; }
  rows.push(ingest);
  const files = (x) => `${x.store.files.toLocaleString("en")} file${x.store.files === 1 ? "" : "s"}, ${mib(x.store.bytes)}`;
  rows.push({ figure: `CLI ${n}: the store on disk`, peer, memtide: files(c.current), other: c.before ? files(c.before) : "", ratio: "", target: "", status: "" });
  return rows;
}

function footprintRows(footprint) {
  const { memtideWasm, ortWasm, model } = footprint;
  const rows = [
    row(".wasm raw (no model)", "onnxruntime-web .wasm", memtideWasm.raw, ortWasm.raw, mib, "lower"),
    row(".wasm gzipped (no model)", "onnxruntime-web .wasm", memtideWasm.gzip, ortWasm.gzip, mib, "lower", "≤ 3 MB", met(memtideWasm.gzip <= 3e6)),
    { figure: "wasm memory after loading the model (npm package)", peer: "", memtide: mib(model.afterLoad), other: "", ratio: "", target: "", status: "" },
  ];
  return rows;
}

function wasmMemRows(w, footprint) {
  const rows = [];
  const { current, before } = w.packages;
  const peer = before ? "the package given as before" : "";
  const mode = { embed: "embedded, with the model", given: "given vectors, with the model" }[w.model] ?? "lexical-only";
  const unpeered = (r) => { if (!before) { r.other = ""; r.ratio = ""; } return r; };
  if (w.model) rows.push(unpeered(row("wasm memory, empty store with the model: open + one answer", peer, current.base.afterAnswer - current.base.before, before ? before.base.afterAnswer - before.base.before : undefined, mib, "lower")));
  for (const size of w.sizes) {
    const n = Number(size).toLocaleString("en");
    const now = current.sizes[size];
    const was = before?.sizes[size];
    // With the model, all of both modules' memory (the target's figure);
    // lexical-only, what the open and the answer added.
    const [figure, value, old] = w.model
      ? [`wasm memory in all, the model + ${n} memories (${mode}): after open + one answer`, now.afterAnswer, was?.afterAnswer]
      : [`wasm memory, ${n} memories (${mode}): open + one answer`, now.growth, was?.growth];
    const target = w.model && size >= 100000;
    rows.push(unpeered(row(figure, peer, value, old, mib, "lower", target ? "≤ 128 MiB" : "", target ? met(value <= 128 * MIB) : "")));
    rows.push(unpeered(row(`wasm memory per 10,000 memories at ${n} (${mode}${w.model ? ", above the empty store" : ""})`, peer, now.per10k, was?.per10k, mib, "lower")));
  }
  // An estimate, not the target's figure (no embeddings): only when the
  // run did not measure the model with 100,000 memories itself.
  const largest = Math.max(...w.sizes.map(Number));
  if (!w.model && !w.withModel && footprint && largest >= 100000) {
    const total = footprint.model.afterLoad + current.sizes[largest].growth * (100000 / largest);
    rows.push({ figure: "estimate: model + 100,000 memories (model + the lexical-only store above; embeddings not included)", peer: "",
      memtide: mib(total), other: "", ratio: "", target: "", status: "" });
  }
  return w.withModel ? [...rows, ...wasmMemRows(w.withModel, footprint)] : rows;
}

/** Every row of the results present. */
export function tableRows(results) {
  return [
    ...(results.embed ? embedRows(results.embed) : []),
    ...(results.retrieval ? retrievalRows(results.retrieval) : []),
    ...(results.lexical ? lexicalRows(results.lexical) : []),
    ...(results.cold ? coldRows(results.cold) : []),
    ...(results.footprint ? footprintRows(results.footprint) : []),
    ...(results.ops ? opsRows(results.ops) : []),
    ...(results.durable ? durableRows(results.durable) : []),
    ...(results.cli ? cliRows(results.cli) : []),
    ...(results.wasmmem ? wasmMemRows(results.wasmmem, results.footprint) : []),
  ];
}

const COLUMNS = ["figure", "peer", "memtide", "other", "ratio", "target", "status"];
const HEADERS = ["figure", "peer", "memtide", "peer value", "memtide ÷ peer", "target", "met?"];

export function markdownTable(rows) {
  const line = (cells) => `| ${cells.join(" | ")} |`;
  return [line(HEADERS), line(HEADERS.map(() => "---")), ...rows.map((r) => line(COLUMNS.map((c) => r[c])))].join("\n");
}
