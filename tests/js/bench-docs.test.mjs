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
