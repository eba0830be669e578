// A full benchmark run writes its table into docs/benchmarks.md between two
// markers and leaves the hand-written rest of the file as it is.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { LATEST_BEGIN, LATEST_END, latestRunBlock, replaceLatestRun } from "../../bench/lib/docs.mjs";

const DOC = fs.readFileSync(fileURLToPath(new URL("../../docs/benchmarks.md", import.meta.url)), "utf8");

const machine = {
  cpu: "Test CPU", cores: 2, memoryGiB: 8, node: "v20.0.0", date: "2026-11-26T00:00:00Z",
  commit: "abc1234", loadBefore: [0.1, 0.1, 0.1], loadAfter: [3, 2, 1],
};
const results = {
  machine,
  profileSettings: { embedRuns: 20, loads: 3, throughputRuns: 2, sentenceCount: 512, queries: 200, builds: 3, coldRuns: 5 },
  native: { report: "native: 1.0 ms\n" },
};

test("the repository's benchmarks.md holds the markers once each, in order", () => {
  assert.equal(DOC.split(LATEST_BEGIN).length, 2);
  assert.equal(DOC.split(LATEST_END).length, 2);
  assert.ok(DOC.indexOf(LATEST_BEGIN) < DOC.indexOf(LATEST_END));
});

test("a run's block replaces only the text between the markers, and a second run replaces the first", () => {
  const table = "| section | memtide | peer |\n|---|---|---|\n| embed | 1 ms | 2 ms |";
  const block = latestRunBlock(results, table);
  assert.match(block, /commit abc1234/);
  assert.match(block, /\*\*The machine was shared and busy\*\*/);
  assert.ok(block.includes(table));
  assert.ok(block.includes("native: 1.0 ms"));

  const once = replaceLatestRun(DOC, block);
  const before = (doc) => doc.slice(0, doc.indexOf(LATEST_BEGIN));
  const after = (doc) => doc.slice(doc.indexOf(LATEST_END));
  assert.equal(before(once), before(DOC));
  assert.equal(after(once), after(DOC));
  assert.ok(once.includes(block));

  const twice = replaceLatestRun(once, "second run");
  assert.equal(before(twice), before(DOC));
  assert.equal(after(twice), after(DOC));
  assert.ok(!twice.includes(table));
  assert.ok(twice.includes(`${LATEST_BEGIN}\n\nsecond run\n\n${LATEST_END}`));
});

test("a file without both markers, in order, once each, is refused, not rewritten", () => {
  const refused = /must hold/;
  assert.throws(() => replaceLatestRun("# Benchmarks\n", "x"), refused);
  assert.throws(() => replaceLatestRun(`${LATEST_BEGIN}\n`, "x"), refused);
  assert.throws(() => replaceLatestRun(`${LATEST_END}\n${LATEST_BEGIN}\n`, "x"), refused);
  assert.throws(() => replaceLatestRun(`${LATEST_BEGIN}\n${LATEST_BEGIN}\n${LATEST_END}\n`, "x"), refused);
  assert.throws(() => replaceLatestRun(`${LATEST_BEGIN}\n${LATEST_END}\n${LATEST_END}\n`, "x"), refused);
});

// The ≤ 128 MiB target is judged on the figure measured with the model and
// 100,000 memories (all of both modules' memory), never on an estimate.
test("the wasm memory target is read from the run with the model, and an estimate carries no target", async () => {
  const { tableRows } = await import("../../bench/lib/report.mjs");
  const MiB = 1024 * 1024;
  const opened = (before, afterAnswer) => ({ before, afterAnswer, growth: afterAnswer - before, per10k: 1 });
  const lexical = {
    sizes: [10000, 100000], model: false,
    packages: { current: { sizes: { 10000: opened(MiB, 9 * MiB), 100000: opened(MiB, 61 * MiB) } } },
  };
  const withModel = (afterAnswer) => ({
    sizes: [100000], model: "given",
    packages: { current: { base: opened(0, 27 * MiB), sizes: { 100000: opened(2 * MiB, afterAnswer) } } },
  });
  const footprint = { memtideWasm: { raw: 2e6, gzip: 8e5 }, ortWasm: { raw: 1.4e7, gzip: 3.6e6 }, model: { afterLoad: 27 * MiB } };
  const targetRows = (rows) => rows.filter((r) => r.target === "≤ 128 MiB");

  const measured = tableRows({ footprint, wasmmem: { ...lexical, withModel: withModel(127.6 * MiB) } });
  assert.equal(targetRows(measured).length, 1);
  assert.match(targetRows(measured)[0].figure, /in all, the model \+ 100,000 memories/);
  // The total, not the growth above the memory before the open (125.6 MiB).
  assert.equal(targetRows(measured)[0].memtide, "127.6 MiB");
  assert.equal(targetRows(measured)[0].status, "met");
  assert.ok(!measured.some((r) => r.figure.startsWith("estimate")));

  assert.equal(targetRows(tableRows({ footprint, wasmmem: { ...lexical, withModel: withModel(129 * MiB) } }))[0].status, "**missed**");

  const estimated = tableRows({ footprint, wasmmem: lexical });
  assert.equal(targetRows(estimated).length, 0);
  const estimate = estimated.find((r) => r.figure.startsWith("estimate"));
  assert.equal(estimate.memtide, "87.0 MiB");
  assert.equal(estimate.status, "");
});
