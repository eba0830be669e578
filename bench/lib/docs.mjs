// Writes docs/benchmarks.md: how to run the benchmark, what each section
// measures, the machine and the latest table.
import fs from "node:fs";
import path from "node:path";
import { REPO_DIR } from "./paths.mjs";

const load = (l) => l.map((x) => x.toFixed(2)).join(" / ");

/** A 1-minute load average at or above this share of the cores counts as a busy machine. */
const BUSY_LOAD_PER_CORE = 0.5;

/** What the doc says about the machine's load during the run. */
function loadSentence(m) {
  const busy = Math.max(m.loadBefore[0], m.loadAfter[0]) >= BUSY_LOAD_PER_CORE * m.cores;
  const figures = `load average (1/5/15 min) ${load(m.loadBefore)} when the run started and
${load(m.loadAfter)} when it ended, on ${m.cores} cores`;
  return busy
    ? `**The machine was shared and busy**: ${figures}; expect ±20–30 %
and re-run on a quiet machine before drawing fine conclusions.`
    : `The machine was quiet: ${figures}.`;
}

/** The native section's report, when the results have one. */
function nativeParagraph(results) {
  if (!results.native) return "";
  return `Native figures (section 6, no peer), as \`bench_native\` printed them:

\`\`\`text
${results.native.report.trimEnd()}
\`\`\`

`;
}

/** When, at which commit and under which load the figures were taken. */
function runsParagraph(results) {
  const m = results.machine;
  const machine = `${m.cpu} (${m.cores} cores), ${m.memoryGiB} GiB, Node ${m.node}`;
  if (!results.runs) return `${m.date.slice(0, 10)}, ${machine}, commit ${m.commit}.\n${loadSentence(m)} `;
  const runs = results.runs.map((run) =>
    `- ${run.sections.join(", ")}: ${run.date.slice(0, 10)}, commit ${run.commit}. ${loadSentence(run)}`);
  return `${machine}, in ${runs.length} runs of different sections:\n\n${runs.join("\n")}\n\n`;
}

export function writeDocs(results, table) {
  const p = results.profileSettings;
  const peers = Object.entries(results.machine.peers).map(([name, version]) => `\`${name}@${version}\``).join(", ");
  const text = `# Benchmarks

memtide against its peers, in the same run, on the same inputs, in the same
runtime (Node, wasm on both sides unless noted). Every figure is a median
(or a percentile) of repeated runs after warm-up; the table gives memtide's
value, the peer's, and memtide ÷ peer. Not part of \`scripts/test.sh\`.

\`\`\`sh
bash bench/run.sh                # everything (about 20 minutes on 2 cores after the builds, most of it the 100k indexes)
bash bench/run.sh --quick        # fewer repetitions, 1k and 10k memories only (docs untouched)
bash bench/run.sh --sections embed,footprint --sizes 1000,10000
bash bench/run.sh --sections native --sizes 1000   # memtide's native figures alone, smallest store
bash bench/run.sh --sections ops,durable           # storage operations and the Durable Object cold start (issue 21)
bash bench/run.sh --sections cli --cli-before "$(bash bench/cli-before.sh)"   # CLI open, this build against 9cf0a82's
bash bench/run.sh --sections cold --cold-size 100000 --no-docs   # cold start at another size
\`\`\`

\`bench/run.sh\` installs \`bench/\`'s pinned peers (${peers}) with
\`npm install --ignore-scripts\`, fetches the model
(\`scripts/fetch-model.sh\`), builds the npm package when a source is newer
than it (\`scripts/build-pkg.sh\`), builds the Rust entry points of
\`bench/rust/\` (examples \`bench_embed\` and \`bench_native\`, native, and
\`bench_wasm\`, a bench-only wasm module) when embed, retrieval or native
run, and the release CLI when cli runs, then runs \`bench/main.mjs\`, which prints the
table, keeps the raw figures in \`bench/.build/results/latest.json\` and,
after a full run, rewrites this file.

## Latest results

${runsParagraph(results)}Repetitions: ${p.embedRuns} latency runs,
${p.loads} loads, ${p.throughputRuns} throughput passes over ${p.sentenceCount} sentences, ${p.queries} queries per
retrieval size, ${p.builds} lexical builds, ${p.coldRuns} cold starts.

${table}

Ratios are memtide ÷ peer; the parenthesis says which direction is better.

What was tried to meet the missed targets, with its figures, is in
[\`docs/speed.md\`](speed.md) (written by hand; this file is generated).

${nativeParagraph(results)}## What each section measures

1. **Embedding** (\`bench/sections/embed.mjs\`). memtide's MiniLM (tract, the
   same \`MiniLm\` as the package, through \`bench_wasm\`'s \`BenchEmbedder\`)
   against transformers.js \`feature-extraction\` on onnxruntime-web's wasm
   backend, both on the *same* \`model.onnx\` (transformers.js gets a model
   directory laid out by \`bench/lib/hf-model.mjs\`: generated
   \`config.json\`/\`tokenizer_config.json\`, the same \`tokenizer.json\` with
   memtide's settings — no padding, truncation at 256 — and
   \`onnx/model_quantized.onnx\` linked to the file), mean pooling,
   normalized, one thread each, fully offline (\`allowRemoteModels = false\`,
   the ORT wasm files from \`node_modules\`, any network fetch throws).
   Figures: model load (median of loads), one 16- and one 128-token text
   (median of runs after 3 warm-ups), throughput over the sentences in
   batches of 32, and the cosine between both sides' embeddings of 50
   sentences. Native: memtide (\`cargo run --release --example bench_embed\`)
   against transformers.js on onnxruntime-node (one intra-op thread).
   Each runtime runs in its own process.
2. **Retrieval** (\`bench/sections/retrieval.mjs\`, \`bench/lib/engines.mjs\`).
   A seeded synthetic corpus (\`bench/lib/corpus.mjs\`): chat-like memories
   in clusters of 25, each cluster with its own person + topic pair and a
   384-d centroid; a memory's vector is its centroid plus Gaussian noise
   (pairwise cosine ≈ 0.6 within a cluster), its text names the pair plus
   stopword-free filler of equal length. A query names a pair and its
   vector lies near the centroid, so the exact cosine top 10 is also the
   ideal hybrid top 10: recall@10 is measured against the exact
   (brute-force cosine, f32) top 10 for every engine. memtide's JavaScript API
   cannot take precomputed vectors, so \`bench_wasm\`'s \`BenchStore\` holds a
   \`Memory\` (in-memory storage) whose embedder returns the registered
   vector of each text, and a query is timed with its vector registered
   beforehand: *query embedding excluded* (add the 16-token latency). Memories
   are created an hour apart so none "follows" another (its context vector
   is its own). Peers: Orama hybrid (\`hybridWeights\` text 0.4 / vector
   0.6, memtide's weights; \`similarity: 0\`) and hnswlib-wasm vector-only (M
   16, efConstruction 200, efSearch 64). Each engine and size runs in a
   fresh process: build time, memory added by the build per 10k memories
   (memtide: its wasm linear memory, which never shrinks, so it includes the
   build's peaks; JS peers: V8 heap + external after GC), and p50/p95 per
   query after warm-up.
3. **Lexical** (\`bench/sections/lexical.mjs\`). The npm package without a
   model (lexical-only: BM25 plus its thread signals) against MiniSearch on
   the same ${p.lexicalSize.toLocaleString("en")} texts and queries: index build (memtide's
   \`ingest\` in batches of 1,000, which also deduplicates and writes its
   records to in-memory storage, against \`addAll\`), query p50/p95.
4. **Cold start** (\`bench/sections/coldstart.mjs\`, \`bench/web/coldstart.mjs\`).
   Headless Chromium (\`/usr/bin/chromium\` through playwright-core). A page
   stores the ${p.coldSize.toLocaleString("en")} texts with the package's IndexedDB storage, and
   for the peer in an Orama index saved (\`save\`) as one IndexedDB value;
   then each run opens a fresh page that opens the store (Orama: reads the
   value and \`load\`s it) and answers the first query. The figure is the
   page's \`performance.now()\` when the answer is in (from navigation start,
   code and .wasm from the HTTP cache; the first visit is not counted).
   The bench's server sends cache headers (\`cache-control\`,
   \`last-modified\`), as a site serves its assets, so Chromium may keep
   code and compiled .wasm between visits; the page is given the query's
   text. Each visit also reports its stages: page load → the page's script
   runs, → the engine's code is imported, → memtide's .wasm is fetched and
   compiled (\`init()\`; Orama has none), → the store is open, → the answer.
   The page opens no model, so memtide's model module is neither fetched
   nor compiled (since 2026-11-26, third session). \`--cold-before DIR\`
   runs an earlier build of the package (a \`dist/memtide\` directory) as a
   third engine in the same run.
   Each engine's visits run in a browser profile of its own on disk, as a
   returning visitor's browser keeps its HTTP cache, code cache and
   IndexedDB (before the second session of 2026-11-26 they ran in an
   in-memory context, which downloaded the 9 MiB .wasm again on every
   visit); memtide's row also tells whether each counted visit took the
   .wasm from the HTTP cache, when its response ended, and how many
   entries V8's wasm code cache holds afterwards. One more visit per
   memtide build, traced through the DevTools protocol and not timed,
   counts what V8 did for the WebAssembly (since 2026-11-26, fifth
   session): functions compiled by the baseline compiler at their first
   call, \`memory.grow\`s, functions recompiled by the optimizing compiler
   in the background, each with its summed wall time, and whether the
   compiled module came from Chromium's code cache.
   Texts only, no model on either side (its load is section 1's figure).
5. **Footprint** (\`bench/sections/footprint.mjs\`). \`dist/memtide\`'s .wasm raw
   and gzipped (level 9, no model inside) against onnxruntime-web's
   \`ort-wasm-simd-threaded.wasm\`; the package's wasm memory after
   \`Memory.open\` with the model (fresh process); heap per 10k memories from
   section 2. "Model + 100,000 memories" adds the two measured figures (MiB).

6. **Native** (\`bench/sections/native.mjs\`, \`bench/rust/bench_native.rs\`).
   memtide natively, no peer, with a counting allocator for the heap: model
   load time, heap after the load and its peak during it, one 16- and one
   128-token text (median of 20), 32 texts of 16 tokens batched against one
   at a time, the heap peak of 32 texts of 256 tokens; ingest of the 788
   LoCoMo dev-set turns (batches of 256) with the model and lexical-only;
   and at each retrieval size a store of that many memories (two LoCoMo
   turns each, one scope, vectors of a hashed bag-of-words stand-in for the
   model): its ingest rate, heap per 10k memories (and the share of it in
   the in-memory storage's records), and hybrid retrieve p50/p95 over the
   dev-set questions, query embedding excluded.
7. **Storage operations** (\`bench/sections/ops.mjs\`, issue 21). The npm
   package in Node over a Map behind an adapter without \`batch\` (get, put,
   delete, list: how a Worker uses \`memtide/cloudflare-kv\`) that counts
   every call, the keys its \`list\` returns and the bytes read and
   written; exact counts, no timing. At ${p.opsSizes?.map((n) => n.toLocaleString("en")).join(" and ") ?? "each size"} memories (a fresh
   process each): the fill (ingests of 1,000), opening the store anew and
   answering one query (\`retrieve\` as is, which marks the hits used and so
   writes, and with \`dryRun\`), and ${p.opsSingles?.toLocaleString("en") ?? "n"} single ingests, one memory each, onto
   the filled store and onto an empty one (mean operations per ingest).
   Lexical-only; \`--ops-model\` adds 10,000 memories with the model
   (vector records too; minutes of embedding).
8. **Durable Object cold start** (\`bench/sections/durable.mjs\`, issue 21).
   \`examples/cloudflare-durable-object\` assembled with the built package as
   \`tests/js/durable-object.test.mjs\` does, in workerd through miniflare
   (root \`devDependencies\`), storage persisted to a temporary directory.
   One user's object gets ${p.durableSize?.toLocaleString("en") ?? "n"} memories in ingests of 1,000; miniflare is
   disposed; each run starts a new miniflare over the same directory and
   times, from Node, the first request, a \`retrieve\` with \`dryRun\` (the
   object starts, opens the store from its SQLite storage and answers),
   then a second one, and the CPU time workerd's processes used during
   the first (from \`/proc\`, 10 ms ticks; a busy machine inflates it less
   than wall time); and in another new miniflare the first \`retrieve\`
   of an object with an empty store (what does not depend on the store:
   the isolate, the .wasm's instantiation, the object). The first run is
   a warm-up; ${p.durableRuns ?? "n"} runs counted; median (min–max).
9. **CLI open** (\`bench/sections/cli.mjs\`, issue 21). The release CLI
   (\`target/release/memtide\`) and, with \`--cli-before PATH\` (built by
   \`bench/cli-before.sh\`: 9cf0a82, before the segmented layout, in a
   worktree with its own \`target/\`), an older build: each makes its own
   store of ${p.cliSize?.toLocaleString("en") ?? "n"} memories from the same JSON Lines (the corpus of
   section 2's texts, one scope) with \`memtide ingest\`, no model; then
   each run, alternating between the builds, times \`memtide stats\` (open
   and count) and \`memtide retrieve\` of one query with \`dryRun\` (open and
   answer) under \`/usr/bin/time\`: wall seconds and peak RSS, ${p.cliRuns ?? "n"} runs,
   median (min–max).

## Limits

- memtide's retrieval and embedding figures come from \`bench_wasm\`, not the
  npm package's \`Memory\` class: the same engine and build flags, without
  the package's JSON conversion of arguments and hits (the package cannot
  take precomputed vectors and has no \`embed\` call). Lexical, cold start
  and footprint use the package itself.
- Cold start stores texts only (no vectors on either side): embedding 10k
  memories in the page would take minutes.
- Memory of the JavaScript peers is V8 heap + external after GC (it
  includes their wasm memories); transformers.js's memory after load is in
  \`latest.json\` but not in the table, as onnxruntime-web's allocations
  are not reliably visible that way.
- \`bench/.build/results/latest.json\` keeps every raw figure;
  \`node bench/main.mjs --from FILE [--write-docs]\` re-renders the table;
  several \`--from\` make one table from runs of different sections (the
  results above name each run).
`;
  fs.writeFileSync(path.join(REPO_DIR, "docs", "benchmarks.md"), text);
}
