// `memtide/worker` in headless Chromium: a store in a dedicated worker and
// in a SharedWorker behind `WorkerMemory`, with the built package served
// from dist/memtide. Checks the promise API across the boundary (results,
// MemtideErrors with their codes, progress and an abort of a long ingest),
// the model fetched in the worker from a base URL, and two pages of one
// origin on one SharedWorker sharing one store: with `storage: "memory"`
// there is no database between them, so each seeing the other's writes
// (and `onChange` firing) shows they use one instance; and two pages with a
// dedicated worker each on one IndexedDB database, kept in step by the
// database and told by `onChange`.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { servePackage } from "./chromium.mjs";

const modelDir = process.env.MEMTIDE_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { encoding: "utf8" }).trim().split("\n").pop();
const page = `<!doctype html><meta charset="utf-8"><title>memtide worker test</title>
<script type="module">
  import { WorkerMemory } from "/dist/memtide/worker.js";
  import { MemtideError } from "/dist/memtide/browser.js";
  window.memtide = { WorkerMemory, MemtideError };
  document.title = "ready";
</script>`;
const workerScript = `import { serve } from "/dist/memtide/worker.js";\nserve();\n`;

let site;
let base;
let browser;
const openTab = (context) => site.openTab(context);

before(async () => {
  site = await servePackage(async (path) => {
    if (path === "/") return page;
    if (path === "/store-worker.js") return workerScript;
    if (path.startsWith("/model/")) return readFile(`${modelDir}/${path.slice(7)}`);
    return undefined;
  });
  ({ base, browser } = site);
});

after(() => site?.close());

test("a store in a dedicated worker: results, error codes, progress, abort, the model from a URL", async () => {
  const context = await browser.newContext();
  const tab = await openTab(context);
  const out = await tab.evaluate(async () => {
    const { WorkerMemory, MemtideError } = window.memtide;
    const worker = new Worker("/store-worker.js", { type: "module" });
    const stages = [];
    const downloads = [];
    const mem = await WorkerMemory.open(worker, { name: "dedicated", onProgress: (p) => stages.push(p.stage) });
    const scope = { userId: "ann", workspaceId: "home" };
    const embedded = await mem.setModel({ baseUrl: "/model/" }, { onDownload: (p) => downloads.push(p.loaded) });
    await mem.ingest([
      { text: "My sister's birthday is on the ninth of March.", scope },
      { text: "I water the ferns every Sunday morning.", scope },
    ]);
    const hits = await mem.retrieve({ text: "when is my sister's birthday?", scope });
    let notFound;
    try { await mem.get("01ARZ3NDEKTSV4RRFFQ69G5FAV"); } catch (e) { notFound = { isClass: e instanceof MemtideError, code: e.code }; }
    let invalid;
    try { await mem.ingest({ text: "", scope }); } catch (e) { invalid = e.code; }
    // remember: the extractor runs in the page, retrieval and the operations in the worker.
    const remembered = await mem.remember([{ role: "user", content: "I water the ferns on Saturdays now." }], {
      scope,
      extractor: ({ memories }) => [{ op: "update", id: memories.find((m) => m.text.includes("ferns")).id, text: "Waters the ferns every Saturday morning." }],
    });
    let badOperations;
    try { await mem.remember([{ role: "user", content: "ferns" }], { scope, extractor: () => "no operations" }); } catch (e) { badOperations = { code: e.code, isClass: e instanceof MemtideError }; }

    const controller = new AbortController();
    const done = [];
    const notes = Array.from({ length: 300 }, (_, i) => ({ text: `Worker note ${i}: plan ${i * 7919 % 10007} on day ${i}`, scope }));
    let aborted;
    try {
      await mem.ingest(notes, { signal: controller.signal, onProgress: (p) => { done.push(p.done); if (p.done >= 64) controller.abort(); } });
    } catch (e) { aborted = { code: e.code, isClass: e instanceof MemtideError }; }
    const stats = await mem.stats();
    const wasmBytes = await mem.wasmMemoryBytes();
    await mem.close();
    let closed;
    try { await mem.stats(); } catch (e) { closed = e.code; }
    worker.terminate();
    return { stages, embedded, downloads: downloads.length, top: hits[0]?.item.text, notFound, invalid, aborted, done, stats, wasmBytes, closed, remembered, badOperations };
  });
  assert.deepEqual(out.stages, ["storage", "ready"]);
  assert.equal(out.embedded, 0);
  assert.ok(out.downloads > 1, "download progress crossed from the worker");
  assert.equal(out.top, "My sister's birthday is on the ninth of March.");
  assert.deepEqual(out.notFound, { isClass: true, code: "NOT_FOUND" });
  assert.equal(out.invalid, "INVALID_INPUT");
  assert.equal(out.remembered.superseded.length, 1);
  assert.deepEqual(out.remembered.added, [out.remembered.superseded[0].by]);
  assert.deepEqual(out.badOperations, { code: "INVALID_OPERATIONS", isClass: true });
  assert.deepEqual(out.aborted, { code: "ABORTED", isClass: true });
  // The abort crosses from the page to the worker as a message, so the
  // worker may start a batch or two more before it sees it; it stops at a
  // batch boundary, before the last, and commits nothing.
  assert.deepEqual(out.done.slice(0, 2), [0, 64]);
  assert.ok(out.done.every((d, i) => i === 0 || d - out.done[i - 1] === 64), `${out.done}`);
  assert.ok(out.done.at(-1) < 300, `${out.done}`);
  assert.equal(out.stats.items, 3, "the aborted ingest stored nothing (two memories and the one that superseded one)");
  assert.equal(out.stats.retrievalMode, "hybrid");
  assert.ok(out.wasmBytes > 20 * 1024 * 1024, "the model lives in the worker");
  assert.equal(out.closed, "CLOSED");
  await context.close();
});

test("two pages on one SharedWorker share one store and see each other's writes", async () => {
  const context = await browser.newContext();
  const [tabA, tabB] = [await openTab(context), await openTab(context)];
  const open = (tab) => tab.evaluate(async () => {
    window.changes = 0;
    const worker = new SharedWorker("/store-worker.js", { type: "module" });
    window.mem = await window.memtide.WorkerMemory.open(worker, {
      name: "shared", storage: "memory", onChange: () => window.changes++,
    });
  });
  await open(tabA);
  await open(tabB);
  const scope = { userId: "ann", workspaceId: "shared" };
  await tabA.evaluate((scope) => window.mem.ingest({ text: "Tab A says the plums are ripe.", scope }), scope);
  await tabB.waitForFunction(() => window.changes > 0);
  const inB = await tabB.evaluate(async (scope) => {
    const hits = await window.mem.retrieve({ text: "plums", scope, dryRun: true });
    await window.mem.ingest({ text: "Tab B says the pears are not.", scope });
    return hits[0]?.item.text;
  }, scope);
  assert.equal(inB, "Tab A says the plums are ripe.");
  await tabA.waitForFunction(() => window.changes > 0);
  const inA = await tabA.evaluate(async () => (await window.mem.stats()).items);
  assert.equal(inA, 2);
  // A page that leaves does not close the store for the other.
  await tabA.evaluate(() => window.mem.close());
  assert.equal(await tabB.evaluate(async () => (await window.mem.stats()).items), 2);
  await context.close();
});

test("two pages, each with a dedicated worker on one IndexedDB database, see each other's writes", async () => {
  const context = await browser.newContext();
  const [tabA, tabB] = [await openTab(context), await openTab(context)];
  const open = (tab) => tab.evaluate(async () => {
    window.changes = 0;
    const worker = new Worker("/store-worker.js", { type: "module" });
    window.mem = await window.memtide.WorkerMemory.open(worker, { name: "dedicated-pair", onChange: () => window.changes++ });
  });
  await open(tabA);
  await open(tabB);
  const scope = { userId: "ann", workspaceId: "pair" };
  await tabA.evaluate((scope) => window.mem.ingest({ text: "Tab A booked the ferry for Saturday.", scope }), scope);
  await tabB.waitForFunction(() => window.changes > 0);
  const inB = await tabB.evaluate(async (scope) => {
    const hits = await window.mem.retrieve({ text: "ferry", scope, dryRun: true });
    await window.mem.ingest({ text: "Tab B packed the tent.", scope });
    return hits[0]?.item.text;
  }, scope);
  assert.equal(inB, "Tab A booked the ferry for Saturday.");
  await tabA.waitForFunction(() => window.changes > 0);
  assert.equal(await tabA.evaluate(async () => (await window.mem.stats()).items), 2);
  await context.close();
});

test("summarize through a worker: the summarizer runs in the page, the store's calls in the worker", async () => {
  const context = await browser.newContext();
  const tab = await openTab(context);
  const out = await tab.evaluate(async () => {
    const { WorkerMemory } = window.memtide;
    const worker = new Worker("/store-worker.js", { type: "module" });
    const mem = await WorkerMemory.open(worker, { name: "summaries", storage: "memory" });
    const scope = { userId: "ann", workspaceId: "home" };
    const results = await mem.ingest([
      { text: "We are repainting the kitchen green.", scope: { ...scope, sessionId: "s1" } },
      { text: "The paint should have a matte finish.", scope: { ...scope, sessionId: "s1" } },
    ]);
    const given = [];
    const summary = await mem.summarize({
      scope,
      session: "s1",
      summarizer: ({ memories, previous }) => {
        given.push({ texts: memories.map((m) => m.text), previous: previous ?? null });
        return "Kitchen: green, matte.";
      },
    });
    const context = await mem.summaryContext({ scope: { ...scope, sessionId: "s1" } });
    await mem.delete(results[0].id, { hard: true });
    let gone;
    try { await mem.get(summary.id); } catch (e) { gone = e.code; }
    await mem.close();
    worker.terminate();
    return { given, kind: summary.kind, summaryOf: summary.summaryOf, ids: results.map((r) => r.id), previous: context.previous?.id, summaryId: summary.id, gone };
  });
  assert.deepEqual(out.given, [{ texts: ["We are repainting the kitchen green.", "The paint should have a matte finish."], previous: null }]);
  assert.equal(out.kind, "summary");
  assert.deepEqual(out.summaryOf, [...out.ids].sort());
  assert.equal(out.previous, out.summaryId);
  assert.equal(out.gone, "NOT_FOUND");
  await context.close();
});
