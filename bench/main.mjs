// memtide's benchmark against its peers (issue 9). Run through bench/run.sh,
// which builds what this needs first. Usage:
//
//   node --expose-gc bench/main.mjs [--quick] [--sections embed,retrieval,lexical,cold,footprint,native,ops,durable,cli,wasmmem]
//                                   [--sizes 1000,10000,100000] [--cold-size N] [--cli-size N]
//                                   [--cli-before PATH] [--cold-before DIR] [--wasmmem-before DIR] [--wasmmem-model | --wasmmem-given-vectors] [--ops-model] [--write-docs | --no-docs]
//   node bench/main.mjs --from bench/.build/results/latest.json [--write-docs]   (re-render only)
//   node bench/main.mjs --from RUN1.json --from RUN2.json [--write-docs]
//        (one table from runs of different sections on the same machine; the doc names each run)
//
// Prints the ratio table and writes the raw results to
// bench/.build/results/latest.json; a full run (every section, not quick)
// writes its table into docs/benchmarks.md's "Latest full run" unless
// --no-docs.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { BUILD_DIR, REPO_DIR, BENCH_DIR } from "./lib/paths.mjs";
import { markdownTable, tableRows } from "./lib/report.mjs";
import { runEmbed } from "./sections/embed.mjs";
import { runRetrieval } from "./sections/retrieval.mjs";
import { runLexical } from "./sections/lexical.mjs";
import { runColdStart } from "./sections/coldstart.mjs";
import { runFootprint } from "./sections/footprint.mjs";
import { runNative } from "./sections/native.mjs";
import { runOps } from "./sections/ops.mjs";
import { runDurable } from "./sections/durable.mjs";
import { runCli } from "./sections/cli.mjs";
import { runWasmMemory } from "./sections/wasmmem.mjs";

const SECTIONS = ["embed", "retrieval", "lexical", "cold", "footprint", "native", "ops", "durable", "cli", "wasmmem"];
/** Repetitions of a full run and of a quick one. */
const PROFILES = {
  full: { sizes: [1000, 10000, 100000], queries: 200, embedRuns: 20, loads: 5, throughputRuns: 3, sentenceCount: 500,
    lexicalSize: 10000, builds: 3, coldSize: 10000, coldRuns: 5,
    opsSizes: [1000, 10000], opsSingles: 1000, durableSize: 10000, durableRuns: 5, cliSize: 100000, cliRuns: 5,
    wasmMemSizes: [10000, 100000], wasmMemModelSizes: [100000] },
  quick: { sizes: [1000, 10000], queries: 50, embedRuns: 5, loads: 2, throughputRuns: 1, sentenceCount: 100,
    lexicalSize: 10000, builds: 1, coldSize: 10000, coldRuns: 2,
    opsSizes: [1000, 10000], opsSingles: 200, durableSize: 10000, durableRuns: 2, cliSize: 10000, cliRuns: 3,
    wasmMemSizes: [10000], wasmMemModelSizes: [] },
};

function options(argv) {
  const opts = { quick: false, sections: SECTIONS, sizes: null, docs: null, from: null, coldSize: null, cliSize: null,
    cliBefore: process.env.MEMTIDE_BENCH_CLI_BEFORE || null, coldBefore: process.env.MEMTIDE_BENCH_COLD_BEFORE || null, wasmMemBefore: process.env.MEMTIDE_BENCH_WASMMEM_BEFORE || null };
  for (let i = 0; i < argv.length; i++) {
    switch (argv[i]) {
      case "--quick": opts.quick = true; break;
      case "--sections": opts.sections = argv[++i].split(","); break;
      case "--sizes": opts.sizes = argv[++i].split(",").map(Number); break;
      case "--write-docs": opts.docs = true; break;
      case "--no-docs": opts.docs = false; break;
      case "--from": (opts.from ??= []).push(argv[++i]); break;
      case "--cold-size": opts.coldSize = Number(argv[++i]); break;
      case "--cli-size": opts.cliSize = Number(argv[++i]); break;
      case "--cli-before": opts.cliBefore = argv[++i]; break;
      // An earlier build of the package (a dist/memtide directory), started
      // cold in the same run as a third engine (bench/sections/coldstart.mjs).
      case "--cold-before": opts.coldBefore = argv[++i]; break;
      case "--wasmmem-before": opts.wasmMemBefore = argv[++i]; break;
      // The wasmmem section with every memory embedded and the model loaded.
      case "--wasmmem-model": opts.wasmMemModel = "embed"; break;
      // The same with the corpus's vectors under the model's id (sizes the
      // model cannot embed in time; bench/sections/wasmmem.mjs).
      case "--wasmmem-given-vectors": opts.wasmMemModel = "given"; break;
      case "--ops-model": opts.opsModel = true; break;
      default: throw new Error(`unknown argument ${argv[i]} (see the comment at the top of bench/main.mjs)`);
    }
  }
  const unknown = opts.sections.filter((s) => !SECTIONS.includes(s));
  if (unknown.length) throw new Error(`unknown sections ${unknown} (known: ${SECTIONS})`);
  const profile = { ...PROFILES[opts.quick ? "quick" : "full"] };
  if (opts.sizes) profile.sizes = opts.sizes;
  if (opts.coldSize) profile.coldSize = opts.coldSize;
  if (opts.cliSize) profile.cliSize = opts.cliSize;
  // The ops section with the model too (10,000 memories embedded: minutes).
  profile.opsModelSize = opts.opsModel ? 10000 : null;
  opts.docs ??= !opts.from && !opts.quick && opts.sections.length === SECTIONS.length && !opts.sizes && !opts.coldSize && !opts.cliSize;
  return { ...opts, profile };
}

function machine() {
  const cpuinfo = fs.readFileSync("/proc/cpuinfo", "utf8");
  const model = cpuinfo.match(/^model name\s*:\s*(.*)$/m)?.[1] ?? os.cpus()[0]?.model ?? "unknown";
  const git = (...args) => execFileSync("git", ["-C", REPO_DIR, ...args], { encoding: "utf8" }).trim();
  const peers = JSON.parse(fs.readFileSync(path.join(BENCH_DIR, "package.json"), "utf8")).dependencies;
  return {
    cpu: model,
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    date: new Date().toISOString(),
    commit: git("rev-parse", "--short", "HEAD") + (git("status", "--porcelain", "--untracked-files=no") ? " (with uncommitted changes)" : ""),
    peers,
    loadBefore: os.loadavg(),
  };
}

const log = (message) => console.error(`bench: ${message}`);

/**
 * Prints the table of `results` and the native section's report, and, if
 * asked, writes the table into docs/benchmarks.md's "Latest full run".
 */
async function report(results, writeDocsToo) {
  const table = markdownTable(tableRows(results));
  console.log(table);
  if (results.native) console.log(`\n${results.native.report}`);
  if (writeDocsToo) {
    const { writeDocs } = await import("./lib/docs.mjs");
    writeDocs(results, table);
    log("wrote the table into docs/benchmarks.md");
  }
}

/**
 * One result set from runs of disjoint sections with the same repetitions:
 * each section from the run that measured it, `runs` naming every run's
 * machine state and sections.
 */
function mergeRuns(runs) {
  if (runs.length === 1) return runs[0];
  const merged = { ...runs.at(-1), sections: [], runs: [] };
  for (const run of runs) {
    if (run.profile !== merged.profile) throw new Error("cannot merge a quick run with a full one");
    for (const section of run.sections) {
      if (merged.sections.includes(section)) throw new Error(`section ${section} is in two runs`);
      merged.sections.push(section);
      merged[section] = run[section];
    }
    merged.runs.push({ ...run.machine, sections: run.sections });
  }
  return merged;
}

async function run() {
  const opts = options(process.argv.slice(2));
  if (opts.from) {
    const runs = opts.from.map((file) => JSON.parse(fs.readFileSync(file, "utf8")));
    await report(mergeRuns(runs), opts.docs);
    return;
  }
  const p = opts.profile;
  const results = { machine: machine(), profile: opts.quick ? "quick" : "full", sections: opts.sections };
  const want = (s) => opts.sections.includes(s);
  if (want("embed")) results.embed = runEmbed({ runs: p.embedRuns, loads: p.loads, throughputRuns: p.throughputRuns, sentenceCount: p.sentenceCount, log });
  if (want("retrieval")) results.retrieval = runRetrieval({ sizes: p.sizes, queries: p.queries, log });
  if (want("lexical")) results.lexical = runLexical({ size: p.lexicalSize, queries: p.queries, builds: p.builds, log });
  if (want("cold")) results.cold = await runColdStart({ size: p.coldSize, runs: p.coldRuns, before: opts.coldBefore, log });
  if (want("footprint")) results.footprint = runFootprint({ log });
  if (want("native")) results.native = runNative({ sizes: p.sizes, log });
  if (want("ops")) results.ops = runOps({ sizes: p.opsSizes, singles: p.opsSingles, modelSize: p.opsModelSize, log });
  if (want("durable")) results.durable = await runDurable({ size: p.durableSize, runs: p.durableRuns, log });
  if (want("cli")) results.cli = runCli({ size: p.cliSize, runs: p.cliRuns, before: opts.cliBefore, log });
  if (want("wasmmem")) {
    results.wasmmem = runWasmMemory({ sizes: p.wasmMemSizes, before: opts.wasmMemBefore, model: opts.wasmMemModel ?? false, log });
    // Without a mode asked for, a full run also measures the target's own
    // figure (the model and 100,000 memories), with the corpus's vectors.
    if (!opts.wasmMemModel && p.wasmMemModelSizes.length) {
      results.wasmmem.withModel = runWasmMemory({ sizes: p.wasmMemModelSizes, before: opts.wasmMemBefore, model: "given", log });
    }
  }
  results.machine.loadAfter = os.loadavg();
  results.profileSettings = p;

  fs.mkdirSync(path.join(BUILD_DIR, "results"), { recursive: true });
  fs.writeFileSync(path.join(BUILD_DIR, "results", "latest.json"), JSON.stringify(results, null, 2));
  await report(results, opts.docs);
}

await run();
