// Section 9, CLI open (issue 21): every command of the native CLI
// (`target/release/memtide`, crates/cli) opens the whole store first. For
// each CLI binary given (this build's, and optionally an older build's,
// `--cli-before PATH` or MEMTIDE_BENCH_CLI_BEFORE), a store of `size`
// memories is made from the same JSON Lines (the seeded corpus of
// bench/lib/corpus.mjs, one scope) by `memtide ingest` (no model:
// lexical-only), then each run times, under /usr/bin/time (wall seconds,
// CPU seconds (user + system: the figure to read on a busy machine) and
// peak RSS):
//
// - `memtide stats`: open the store and count;
// - `memtide retrieve` with one query: open and answer.
//
// Runs alternate between the binaries, so both see the same machine load.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { memoryCorpus } from "../lib/corpus.mjs";
import { REPO_DIR } from "../lib/paths.mjs";
import { median } from "../lib/stats.mjs";

export const CLI_BIN = path.join(REPO_DIR, "target", "release", "memtide");
const SCOPE = { userId: "bench", workspaceId: "main" };

const spread = (samples) => ({ median: median(samples), min: Math.min(...samples), max: Math.max(...samples), samples });

/** Runs `bin args` with `input` on stdin under /usr/bin/time: {seconds, cpuSeconds, rssKiB, stdout}. */
function timed(bin, args, input) {
  const env = { ...process.env };
  delete env.MEMTIDE_MODEL_DIR;
  delete env.MEMTIDE_STORE;
  const out = spawnSync("/usr/bin/time", ["-f", "TIME %e %M %U %S", bin, ...args], {
    input, env, encoding: "utf8", maxBuffer: 1 << 30,
  });
  if (out.status !== 0) throw new Error(`cli: ${bin} ${args.join(" ")} failed (${out.status}): ${out.stderr.slice(-2000)}`);
  const [, seconds, rss, user, sys] = out.stderr.match(/TIME ([\d.]+) (\d+) ([\d.]+) ([\d.]+)\s*$/);
  return { seconds: Number(seconds), cpuSeconds: Number(user) + Number(sys), rssKiB: Number(rss), stdout: out.stdout };
}

/** Files and bytes under `dir`. */
function du(dir) {
  let files = 0;
  let bytes = 0;
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    files++;
    bytes += fs.statSync(path.join(entry.parentPath ?? entry.path, entry.name)).size;
  }
  return { files, bytes };
}

export function runCli({ size, runs, before, log }) {
  const bins = [{ name: "current", bin: CLI_BIN }];
  if (before) bins.push({ name: "before", bin: path.resolve(before) });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "memtide-bench-cli-"));
  try {
    const { texts, queries } = memoryCorpus(size, 1);
    const jsonl = texts.map((text) => JSON.stringify({ text, scope: SCOPE })).join("\n") + "\n";
    const query = JSON.stringify({ text: queries[0].text, scope: SCOPE, limit: 10 }) + "\n";
    const results = {};
    for (const { name, bin } of bins) {
      const version = execFileSync(bin, ["--version"], { encoding: "utf8" }).trim();
      const store = path.join(work, name);
      log(`cli: ${name} (${bin}): ingesting ${size} memories`);
      const ingest = timed(bin, ["--store", store, "ingest"], jsonl);
      results[name] = { bin, version, ingest: { seconds: ingest.seconds, cpuSeconds: ingest.cpuSeconds, rssKiB: ingest.rssKiB }, store: du(store), stats: [], retrieve: [] };
    }
    for (let i = 0; i < runs; i++) {
      for (const { name, bin } of bins) {
        const store = path.join(work, name);
        const stats = timed(bin, ["--store", store, "stats"], "");
        const items = JSON.parse(stats.stdout.trim().split("\n").pop()).items;
        if (items !== size) throw new Error(`cli: ${name}'s store holds ${items} memories, not ${size}`);
        // dryRun keeps the store the same from run to run.
        const retrieve = timed(bin, ["--store", store, "retrieve"], query.replace(/}\n$/, ',"dryRun":true}\n'));
        const hits = JSON.parse(retrieve.stdout.trim().split("\n").pop()).results.length;
        if (hits === 0) throw new Error(`cli: ${name}: the query found nothing`);
        results[name].stats.push(stats);
        results[name].retrieve.push(retrieve);
        log(`cli: ${name} run ${i + 1}: stats ${stats.seconds} s (CPU ${stats.cpuSeconds.toFixed(2)} s) ${Math.round(stats.rssKiB / 1024)} MiB, retrieve ${retrieve.seconds} s (CPU ${retrieve.cpuSeconds.toFixed(2)} s) ${Math.round(retrieve.rssKiB / 1024)} MiB`);
      }
    }
    for (const r of Object.values(results)) {
      for (const command of ["stats", "retrieve"]) {
        const samples = r[command];
        r[command] = {
          seconds: spread(samples.map((s) => s.seconds)),
          cpuSeconds: spread(samples.map((s) => s.cpuSeconds)),
          rssMiB: spread(samples.map((s) => s.rssKiB / 1024)),
        };
      }
    }
    return { size, runs, ...results };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
