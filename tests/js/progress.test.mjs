// Node tests of the long calls' `{ onProgress, signal }` options with the
// real model: an aborted ingest or import leaves the store as before the
// call (checked by reopening its storage), an aborted `setModel` keeps whole
// batches of 256 embedded and the next open with the model embeds the rest,
// progress never goes back and ends at the total, and an abort fired by
// another task of the event loop (not by the progress callback) is seen.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";

import { Memory, MemtideError } from "../../dist/memtide/node.js";
import { mapAdapter } from "./map-adapter.mjs";

const modelDir = process.env.MEMTIDE_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { encoding: "utf8" }).trim().split("\n").pop();
const model = {
  onnx: await readFile(`${modelDir}/model.onnx`),
  tokenizer: await readFile(`${modelDir}/tokenizer.json`, "utf8"),
};

const scope = { userId: "u1", workspaceId: "w" };
const topics = ["garden", "taxes", "violin", "kayak", "sourdough", "chess", "astronomy", "pottery"];
/** `n` distinct inputs that share few words, so none merges into another. */
const inputs = (n, from = 0) => Array.from({ length: n }, (_, k) => {
  const i = from + k;
  return { text: `Note ${i}: the ${topics[i % 8]} plan number ${i * 7919 % 10007} is due on day ${i}`, scope };
});

/** The progress events of a call, checked: monotonic, ending at total. */
function recorder() {
  const events = [];
  return {
    events,
    onProgress: (p) => events.push(p),
    assertComplete(total) {
      assert.ok(events.length >= 2, JSON.stringify(events));
      for (const [i, e] of events.entries()) {
        assert.equal(e.total, total);
        if (i > 0) assert.ok(e.done >= events[i - 1].done, JSON.stringify(events));
      }
      assert.equal(events.at(-1).done, total);
    },
  };
}

const isAborted = (e) => e instanceof MemtideError && e.code === "ABORTED";

test("an aborted ingest leaves the store as before; a whole one reports up to its total", async () => {
  const storage = mapAdapter({ atomic: true });
  const mem = await Memory.open({ storage, model });
  await mem.ingest(inputs(5));
  const before = await mem.export();

  const controller = new AbortController();
  const progress = recorder();
  await assert.rejects(mem.ingest(inputs(200, 5), {
    signal: controller.signal,
    onProgress: (p) => { progress.onProgress(p); if (p.done >= 64) controller.abort(); },
  }), isAborted);
  assert.deepEqual(progress.events.map((e) => e.done), [0, 64]);
  assert.equal((await mem.stats()).items, 5);
  const reopened = await Memory.open({ storage });
  assert.equal(strip(await reopened.export()), strip(before));

  const whole = recorder();
  const results = await mem.ingest(inputs(200, 5), { onProgress: whole.onProgress });
  assert.equal(results.length, 200);
  whole.assertComplete(200);
  // Templated notes are near-duplicates of each other now and then: merged.
  const added = results.filter((r) => r.outcome === "added").length;
  assert.ok(added > 100, `${added} added`);
  const after = await (await Memory.open({ storage })).stats();
  assert.equal(after.items, 5 + added);
});

test("an abort fired by another task stops the call at its next batch", async () => {
  const mem = await Memory.open({ storage: "memory", model });
  const controller = new AbortController();
  const ingesting = mem.ingest(inputs(300), { signal: controller.signal });
  setTimeout(() => controller.abort(new Error("the user closed the dialog")), 0);
  await assert.rejects(ingesting, (e) => isAborted(e) && e.message.includes("the user closed the dialog"));
  assert.equal((await mem.stats()).items, 0);
  // An already aborted signal stops the call before any work.
  await assert.rejects(mem.import(await mem.export(), { signal: AbortSignal.abort() }), isAborted);
  // The store stays usable.
  assert.equal((await mem.ingest(inputs(1)))[0].outcome, "added");
});

test("an aborted setModel keeps whole batches; the next open with the model embeds the rest", async () => {
  const storage = mapAdapter({ atomic: true });
  const lexical = await Memory.open({ storage });
  await lexical.ingest(inputs(600));
  const controller = new AbortController();
  const progress = recorder();
  await assert.rejects(lexical.setModel(model, {
    signal: controller.signal,
    onProgress: (p) => { progress.onProgress(p); if (p.done >= 256) controller.abort(); },
  }), isAborted);
  assert.deepEqual(progress.events, [{ done: 0, total: 600 }, { done: 256, total: 600 }]);
  assert.equal((await (await Memory.open({ storage })).stats()).embedded, 256);

  const stages = [];
  const mem = await Memory.open({ storage, model, onProgress: (p) => stages.push(p) });
  const backfill = stages.filter((p) => p.stage === "embedding");
  assert.deepEqual(backfill.map((p) => [p.done, p.total]), [[0, 344], [256, 344], [344, 344]]);
  assert.deepEqual(stages.find((p) => p.stage === "embedded"), { stage: "embedded", count: 344 });
  const stats = await mem.stats();
  assert.equal(stats.embedded, 600);
  assert.equal(stats.retrievalMode, "hybrid");
});

test("an import reports progress in memories; an aborted one changes nothing", async () => {
  const source = await Memory.open({ storage: "memory" });
  await source.ingest(inputs(100));
  const data = await source.export();
  const storage = mapAdapter({ atomic: true });
  const mem = await Memory.open({ storage, model });
  const controller = new AbortController();
  await assert.rejects(mem.import(data, {
    signal: controller.signal,
    onProgress: ({ done }) => { if (done > 0) controller.abort(); },
  }), isAborted);
  assert.equal((await (await Memory.open({ storage })).stats()).items, 0);
  const progress = recorder();
  const result = await mem.import(data, { onProgress: progress.onProgress });
  assert.equal(result.added, 100);
  progress.assertComplete(100);
  assert.equal((await mem.stats()).embedded, 100);
});

test("progress options are checked", async () => {
  const mem = await Memory.open({ storage: "memory" });
  for (const options of [{ signal: {} }, { onProgress: 5 }, "fast"]) {
    await assert.rejects(mem.ingest(inputs(1), options), (e) => e.code === "INVALID_INPUT", JSON.stringify(options));
  }
  // A throwing callback does not fail the call.
  const results = await mem.ingest(inputs(2), { onProgress: () => { throw new Error("ui gone"); } });
  assert.equal(results.length, 2);
});

/** An export without its timestamp, to compare contents. */
function strip(exported) {
  const value = JSON.parse(exported);
  delete value.exportedAt;
  return JSON.stringify(value);
}
