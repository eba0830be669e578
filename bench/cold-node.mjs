// The cold start's WebAssembly part in Node, through built packages: for
// quick comparisons of two builds (an allocator, the bindings) where the
// Chromium section (bench/sections/coldstart.mjs) takes minutes a run. Node
// runs the same V8 as Chromium; what it leaves out is the page (script
// start, fetching the .wasm) and IndexedDB (here a Map behind the adapter
// interface, read before the clock starts).
//
// Each run is a fresh process that times, in milliseconds: importing the
// package's Node entry; `init()` (reading and compiling the core .wasm);
// `Memory.open` over the store; the first `retrieve` (dry run, limit 10), a
// second with another query, and the first query again; the process's CPU
// time (every thread: V8 compiles on background threads) of the open and of
// the first answer, less noisy than wall time on a loaded machine; the
// main thread's own CPU time of each (Linux, from /proc: the process's
// figure adds V8's background threads, which compile hot functions with
// the optimizing compiler while the open runs: at 10,000 they took about
// twice the main thread's time, docs/speed.md, "Cold
// start"); and the core's linear memory after the open and after the
// answers. Packages alternate run by run, so load on the machine falls on
// each alike. V8 flags given to `run` (`node --liftoff-only
// bench/cold-node.mjs run ...`) are passed to each run's process.
//
// Usage:
//   node bench/cold-node.mjs fill --size 10000 --out store.jsonl [--pkg DIR]
//   node bench/cold-node.mjs run --file store.jsonl --runs 5 --pkg DIR_A [--pkg DIR_B ...]
//   node bench/cold-node.mjs once --file store.jsonl --pkg DIR --profile STAGE --out FILE
//     (one run in this process, with a V8 CPU profile of one stage, `open` or
//     `first`, written to FILE: build the package's glue without
//     `--remove-name-section` to see the Rust functions' names)
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { Session } from "node:inspector/promises";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { memoryCorpus } from "./lib/corpus.mjs";
import { load, mapAdapter, save } from "./lib/map-store.mjs";
import { PACKAGE_DIR } from "./lib/paths.mjs";
import { median } from "./lib/stats.mjs";

const SCOPE = { userId: "bench", workspaceId: "main" };
const BATCH = 1000;

function options(argv) {
  const out = { pkg: [] };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, "");
    if (name === "pkg") out.pkg.push(path.resolve(argv[i + 1]));
    else out[name] = argv[i + 1];
  }
  if (out.pkg.length === 0) out.pkg.push(PACKAGE_DIR);
  return out;
}

const entryOf = (pkg) => pathToFileURL(path.join(pkg, "node.js")).href;

async function fill({ size, out, pkg }) {
  const { Memory } = await import(entryOf(pkg[0]));
  const map = new Map();
  const memory = await Memory.open({ storage: mapAdapter(map) });
  const { texts } = memoryCorpus(Number(size), 2);
  for (let i = 0; i < texts.length; i += BATCH) {
    await memory.ingest(texts.slice(i, i + BATCH).map((text) => ({ text, scope: SCOPE })));
  }
  const { items } = await memory.stats();
  await memory.close();
  save(map, out);
  return { items, keys: map.size, bytes: [...map.values()].reduce((n, v) => n + v.length, 0) };
}

/** A V8 CPU profiler at 50 µs, started and stopped around one stage. */
async function profiler(stage, out) {
  if (!stage) return { around: (name, work) => work() };
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 50 });
  return {
    async around(name, work) {
      if (name !== stage) return work();
      await session.post("Profiler.start");
      const result = await work();
      const { profile } = await session.post("Profiler.stop");
      fs.writeFileSync(out, JSON.stringify(profile));
      return result;
    },
  };
}

/** CPU time of this process's main thread in ms (Linux; `undefined`
 * elsewhere): what the page's own thread would spend, without V8's
 * compiler and GC threads. */
function mainThreadMs() {
  try {
    return Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
  } catch {
    return undefined;
  }
}

/** One cold run in this process (the child of `run`). */
async function once({ file, pkg, size = "10000", profile: stage, out }) {
  const prof = await profiler(stage, out);
  const map = load(file);
  const { queries } = memoryCorpus(Number(size), 2);
  const t0 = performance.now();
  const { Memory, init, wasmMemoryBytes } = await import(entryOf(pkg[0]));
  const t1 = performance.now();
  await init();
  const t2 = performance.now();
  const c2 = process.cpuUsage();
  const m2 = mainThreadMs();
  const memory = await prof.around("open", () => Memory.open({ storage: mapAdapter(map) }));
  const t3 = performance.now();
  const c3 = process.cpuUsage(c2);
  const m3 = mainThreadMs();
  const opened = wasmMemoryBytes();
  const ask = (q) => memory.retrieve({ text: q.text, scope: SCOPE, limit: 10, dryRun: true });
  const c4 = process.cpuUsage();
  const m4 = mainThreadMs();
  const first = await prof.around("first", () => ask(queries[0]));
  const t4 = performance.now();
  const c5 = process.cpuUsage(c4);
  const m5 = mainThreadMs();
  await ask(queries[1]);
  const t5 = performance.now();
  const again = await ask(queries[0]);
  const t6 = performance.now();
  if (first.length === 0) throw new Error("cold-node: the first query found nothing");
  if (JSON.stringify(first) !== JSON.stringify(again)) throw new Error("cold-node: the same query answered twice differently");
  return {
    import: t1 - t0, compile: t2 - t1, open: t3 - t2, first: t4 - t3, second: t5 - t4, repeat: t6 - t5,
    openCpu: (c3.user + c3.system) / 1000, firstCpu: (c5.user + c5.system) / 1000,
    ...(m2 === undefined ? {} : { openMain: m3 - m2, firstMain: m5 - m4 }),
    memOpen: opened, memAnswer: wasmMemoryBytes(),
  };
}

function run({ file, pkg, runs = "5", size = "10000" }) {
  const script = fileURLToPath(import.meta.url);
  const samples = Object.fromEntries(pkg.map((p) => [p, []]));
  for (let i = 0; i < Number(runs); i++) {
    for (const p of pkg) {
      const out = execFileSync(process.execPath, [...process.execArgv, script, "once", "--file", file, "--pkg", p, "--size", size], { encoding: "utf8" });
      samples[p].push(JSON.parse(out.trim().split("\n").pop()));
    }
  }
  return Object.fromEntries(pkg.map((p) => {
    const s = samples[p];
    const med = Object.fromEntries(Object.keys(s[0]).map((k) => [k, median(s.map((x) => x[k]))]));
    for (const k of Object.keys(med)) if (!k.startsWith("mem")) med[k] = Math.round(med[k] * 10) / 10;
    return [p, { runs: s.length, median: med, open: s.map((x) => Math.round(x.open)), first: s.map((x) => Math.round(x.first * 10) / 10) }];
  }));
}

const [mode, ...rest] = process.argv.slice(2);
const args = options(rest);
if (mode === "fill") console.log(JSON.stringify(await fill(args)));
else if (mode === "once") console.log(JSON.stringify(await once(args)));
else if (mode === "run") console.log(JSON.stringify(run(args), null, 1));
else throw new Error("usage: node bench/cold-node.mjs fill|run ... (see the top of the file)");
