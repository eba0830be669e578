// Section 4, cold start in Chromium: a page stores the same `size`
// memories in IndexedDB (memtide's IndexedDB storage; Orama's saved index as
// one IndexedDB value, the way an app persists it), then each run loads a
// fresh page that opens the store and answers the first query. The figure
// is the page's `performance.now()` when the answer is in: from navigation
// start, including fetching and compiling the code and the .wasm (from the
// browser's cache after the first run). The page is given the query's text:
// making the corpus again (its vectors) is no part of a cold start, yet
// took most of the figure until 2026-11-26 (docs/benchmarks.md).
//
// Each engine gets its own browser profile on disk, as a returning user's
// browser has: an incognito context (playwright's `newContext`) keeps its
// HTTP cache in memory, where no entry may be larger than an eighth of the
// cache, so the 9 MiB .wasm was downloaded again on every visit, and it
// keeps no code cache and IndexedDB only in memory (docs/speed.md, "Cold
// start").
//
// `before` (bench/main.mjs `--cold-before DIR`): an earlier build of the
// package, served from /pkg-before/ and run as a third engine,
// `memtideBefore`, with a profile and a store of its own, in the same run.
import http from "node:http";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { launchChromiumProfile } from "../lib/chromium.mjs";
import { BENCH_DIR, PACKAGE_DIR } from "../lib/paths.mjs";
import { memoryCorpus } from "../lib/corpus.mjs";
import { median } from "../lib/stats.mjs";

const TYPES = { ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".html": "text/html" };
/** URL prefixes the page loads from, and the directories behind them. */
const ROOTS = {
  "/pkg/": PACKAGE_DIR,
  "/orama/": path.join(BENCH_DIR, "node_modules", "@orama", "orama", "dist", "browser"),
  "/bench/": BENCH_DIR,
};
const PAGE = '<!doctype html><meta charset="utf-8"><script type="module" src="/bench/web/coldstart.mjs"></script>';
const TIMEOUT_MS = 600_000;

/** A static server of `roots` (URL prefix → directory) on a free port. */
async function serve(roots) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://localhost");
    if (url.pathname === "/") {
      res.writeHead(200, { "content-type": "text/html" }).end(PAGE);
      return;
    }
    const prefix = Object.keys(roots).find((p) => url.pathname.startsWith(p));
    const file = prefix && path.join(roots[prefix], path.normalize(url.pathname.slice(prefix.length)));
    if (!file || !file.startsWith(roots[prefix]) || !fs.existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    // Cacheable, as a site or CDN serves its assets: Chromium then takes
    // the scripts and the .wasm from its HTTP cache and keeps the scripts'
    // compiled code between visits, for memtide and Orama alike. It would
    // keep the .wasm's compiled code too, but does not write it after a
    // visit this short (below, `wasmCodeCacheEntries`).
    res.writeHead(200, {
      "content-type": TYPES[path.extname(file)] ?? "application/octet-stream",
      "cache-control": "max-age=3600",
      "last-modified": fs.statSync(file).mtime.toUTCString(),
    });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

/** Files in the profile's code cache of compiled WebAssembly. Chromium
 * 156 writes one when 1,000,000 bytes of a module's code were optimized
 * since the last write, or 2 s after an optimizing compile with none
 * since (V8's `--wasm-caching-*` flags). Neither happened in the bench's
 * visits, nor in visits of a test page kept open 10 s after their answer
 * (docs/speed.md, "Cold start"). */
function wasmCodeCacheEntries(profile) {
  const dir = path.join(profile, "Default", "Code Cache", "wasm");
  if (!fs.existsSync(dir)) return 0;
  return fs.readdirSync(dir).filter((name) => /^[0-9a-f]+_\d+$/.test(name)).length;
}

/** Trace categories holding V8's WebAssembly events (compiles, memory
 * growth, the code cache's reads and writes). */
const TRACE_CATEGORIES = ["v8", "v8.wasm", "disabled-by-default-v8.wasm.detailed", "disabled-by-default-devtools.timeline"];

/** One visit of the page; with `traced`, its V8 WebAssembly events are
 * recorded and summed (`wasmEvents`) into the result's `wasm`. */
async function visit(context, base, query, traced = false) {
  const page = await context.newPage();
  try {
    const trace = traced ? await startTrace(context, page) : null;
    await page.goto(`${base}/?${new URLSearchParams(query)}`);
    await page.waitForFunction(() => window.benchResult, null, { timeout: TIMEOUT_MS });
    const result = await page.evaluate(() => window.benchResult);
    if (result.error) throw new Error(`${query.engine} ${query.phase}: ${result.error}`);
    if (trace) result.wasm = wasmEvents(await trace.stop());
    return result;
  } finally {
    await page.close();
  }
}

/** Starts tracing `page` through the DevTools protocol; `stop()` resolves
 * to the events. */
async function startTrace(context, page) {
  const cdp = await context.newCDPSession(page);
  const events = [];
  cdp.on("Tracing.dataCollected", ({ value }) => events.push(...value));
  await cdp.send("Tracing.start", { traceConfig: { includedCategories: TRACE_CATEGORIES }, transferMode: "ReportEvents" });
  return {
    async stop() {
      const complete = new Promise((resolve) => cdp.once("Tracing.tracingComplete", resolve));
      await cdp.send("Tracing.end");
      await complete;
      await cdp.detach();
      return events;
    },
  };
}

/** What V8 did for the page's WebAssembly during one visit, from its trace
 * events (durations are wall time: on a loaded machine they include time
 * the thread waited for a core):
 * - `lazyCompiles`: functions compiled by the baseline compiler (Liftoff)
 *   at their first call, on the thread calling them;
 * - `memoryGrows`: `memory.grow`s (the allocator asking for more pages);
 * - `optimizingCompiles`: functions recompiled by TurboFan once hot
 *   (dynamic tiering), on background threads;
 * - `codeCacheHit`: whether the compiled module came from Chromium's code
 *   cache, and `codeCacheWrites`: how many times V8 serialized it for that
 *   cache during the visit. */
function wasmEvents(events) {
  const sum = (name) => {
    const matching = events.filter((e) => e.name === name && e.ph === "X");
    return { count: matching.length, ms: Math.round(matching.reduce((n, e) => n + (e.dur ?? 0), 0) / 100) / 10 };
  };
  return {
    lazyCompiles: sum("wasm.CompileLazy"),
    memoryGrows: sum("wasm.GrowMemory"),
    optimizingCompiles: sum("wasm.TopTierCompilation"),
    codeCacheHit: events.some((e) => e.name === "v8.wasm.moduleCacheHit"),
    codeCacheWrites: events.filter((e) => e.name === "v8.wasm.cachedModule").length,
  };
}

export async function runColdStart({ size, runs, before, log }) {
  const roots = before ? { ...ROOTS, "/pkg-before/": path.resolve(before) } : ROOTS;
  const server = await serve(roots);
  const base = `http://127.0.0.1:${server.address().port}`;
  const query = memoryCorpus(size, 1).queries[0].text;
  const profiles = [];
  try {
    const results = {};
    // The page's engine and the package it loads, by the name of the result.
    const engines = { memtide: ["memtide", "/pkg/"], orama: ["orama"], ...(before ? { memtideBefore: ["memtide", "/pkg-before/"] } : {}) };
    for (const [name, [engine, pkg]] of Object.entries(engines)) {
      const profile = fs.mkdtempSync(path.join(os.tmpdir(), "memtide-bench-cold-"));
      profiles.push(profile);
      const context = await launchChromiumProfile(profile);
      log(`cold start: ${name}, storing ${size} memories`);
      const pkgQuery = pkg ? { pkg } : {};
      const { stored } = await visit(context, base, { engine, phase: "populate", size, ...pkgQuery });
      const samples = [];
      const stages = [];
      const wasmFromCache = [];
      // The first cold visit warms the HTTP cache and is not counted.
      for (let i = 0; i <= runs; i++) {
        const { ms, hits, stages: at } = await visit(context, base, { engine, phase: "cold", size, query, ...pkgQuery });
        if (hits === 0) throw new Error(`${name}: the first query found nothing`);
        if (i > 0) {
          samples.push(ms);
          stages.push(at);
          if (at.wasmFromCache !== undefined) wasmFromCache.push(at.wasmFromCache);
        }
      }
      // The median time of each stage: page load → the script runs, →
      // the engine's code is imported, → memtide's .wasm is fetched
      // (its response's end) and compiled (Orama has none), → the store is
      // open, → the answer.
      const stage = (end, start) => median(stages.map((at) => (at[end] ?? at[start]) - at[start]));
      const breakdown = {
        script: median(stages.map((at) => at.started)),
        import: stage("imported", "started"),
        compile: stage("compiled", "imported"),
        fetch: spanMedian(stages, "wasmFetched", "imported"),
        open: median(stages.map((at) => at.opened - (at.compiled ?? at.imported))),
        answer: median(stages.map((at, i) => samples[i] - at.opened)),
      };
      results[name] = { stored, ms: median(samples), samples, breakdown };
      if (engine === "memtide") {
        // Whether each counted visit took the .wasm from the HTTP cache,
        // and whether V8 kept its compiled code.
        results[name].wasmFromCache = wasmFromCache;
        results[name].wasmCodeCacheEntries = wasmCodeCacheEntries(profile);
        // One more visit, traced and not timed (tracing slows the page):
        // where V8's time in the open went (docs/speed.md, "Cold
        // start").
        results[name].wasm = (await visit(context, base, { engine, phase: "cold", size, query, ...pkgQuery }, true)).wasm;
      }
      await context.close();
    }
    return { size, runs, ...results };
  } finally {
    server.close();
    for (const profile of profiles) fs.rmSync(profile, { recursive: true, force: true });
  }
}

/** The median time from stage `start` to stage `end`, over the visits that
 * have `end`; `undefined` when none does. */
function spanMedian(stages, end, start) {
  const spans = stages.filter((at) => at[end] !== undefined).map((at) => at[end] - at[start]);
  return spans.length ? median(spans) : undefined;
}
