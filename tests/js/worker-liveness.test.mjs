// `memtide/worker` when one side dies, in headless Chromium with the built
// package from dist/memtide: a page's pending call rejects with
// `WORKER_GONE` when its dedicated worker is terminated or its SharedWorker
// is killed (and later calls reject at once, none hangs); a SharedWorker
// notices a tab closed without `close()`, stops that tab's calls and closes
// the store once no page is left on it; a `close()` is not taken for a
// death and leaves no lock behind. The call left pending is a
// `setModel` whose model download this server never answers.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { servePackage } from "./chromium.mjs";

const page = `<!doctype html><meta charset="utf-8"><title>memtide liveness test</title>
<script type="module">
  import { WorkerMemory } from "/dist/memtide/worker.js";
  window.WorkerMemory = WorkerMemory;
  document.title = "ready";
</script>`;
const workerScript = `import { serve } from "/dist/memtide/worker.js";\nserve();\n`;

let site;
/** Model downloads left hanging, and those the browser gave up (their connection closed). */
const hanging = [];
const dropped = new Set();
let releaseHanging;
const hangUntil = new Promise((resolve) => { releaseHanging = resolve; });

before(async () => {
  site = await servePackage(async (path, request) => {
    if (path === "/") return page;
    if (path === "/store-worker.js") return workerScript;
    if (path.startsWith("/hang/")) {
      hanging.push(path);
      request.on("close", () => dropped.add(path));
      await hangUntil;
      return "";
    }
    return undefined;
  });
});

after(async () => {
  releaseHanging();
  await site?.close();
});

/** In the page: the outcome of `promise` (its value, or its error's code), or "hung" after `ms`. */
const settle = `(promise, ms) => Promise.race([
  promise.then(() => "resolved", (e) => e?.code ?? String(e)),
  new Promise((resolve) => setTimeout(() => resolve("hung"), ms)),
])`;

/** Resolves once `condition()` holds; fails the test if it does not within 20 s (what never comes). */
async function until(condition, what) {
  for (let waited = 0; !condition(); waited += 20) {
    if (waited > 20000) throw new Error(`never happened: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Resolves once the server holds a download of `prefix` open (the worker is in the middle of the call). */
const downloading = (prefix) => until(() => hanging.some((path) => path.startsWith(prefix)), `a download of ${prefix}`);

/** In `tab`: opens `window.mem` on `kind` ("Worker" or "SharedWorker"), stores a memory, starts a setModel that hangs. */
async function openAndHang(tab, kind, name) {
  await tab.evaluate(async ({ kind, name }) => {
    window.worker = kind === "Worker" ? new Worker("/store-worker.js", { type: "module" }) : new SharedWorker("/store-worker.js", { type: "module" });
    window.mem = await window.WorkerMemory.open(window.worker, { name, storage: "memory" });
    await window.mem.ingest({ text: `The spare key of ${name} is under the blue pot.`, scope: { userId: "ann", workspaceId: "home" } });
    window.pending = window.mem.setModel({ baseUrl: `/hang/${name}/` });
    window.pending.catch(() => {});
  }, { kind, name });
  await downloading(`/hang/${name}/`);
}

/** In `tab`: how the pending call, a later call and `close()` end. */
const outcomes = (tab) => tab.evaluate(async (settle) => {
  settle = eval(settle);
  const call = await settle(window.pending, 20000);
  const later = await settle(window.mem.stats(), 20000);
  const closed = await settle(window.mem.close(), 20000);
  return { call, later, closed };
}, settle);

test("a dedicated worker terminated during a call: the call rejects with WORKER_GONE, and so do later ones", async () => {
  const context = await site.browser.newContext();
  const tab = await site.openTab(context);
  await openAndHang(tab, "Worker", "dedicated");
  await tab.evaluate(() => window.worker.terminate());
  assert.deepEqual(await outcomes(tab), { call: "WORKER_GONE", later: "WORKER_GONE", closed: "resolved" });
  await context.close();
});

test("a SharedWorker killed during a call: each tab's call rejects with WORKER_GONE", async () => {
  const context = await site.browser.newContext();
  const [tabA, tabB] = [await site.openTab(context), await site.openTab(context)];
  await openAndHang(tabA, "SharedWorker", "killed");
  await openAndHang(tabB, "SharedWorker", "killed");
  // Killed from outside, as a crash would: the browser closes the worker's target.
  const cdp = await site.browser.newBrowserCDPSession();
  const { targetInfos } = await cdp.send("Target.getTargets");
  const workers = targetInfos.filter((t) => t.type === "shared_worker");
  assert.equal(workers.length, 1, JSON.stringify(targetInfos.map((t) => t.type)));
  await cdp.send("Target.closeTarget", { targetId: workers[0].targetId });
  for (const tab of [tabA, tabB]) {
    assert.deepEqual(await outcomes(tab), { call: "WORKER_GONE", later: "WORKER_GONE", closed: "resolved" });
  }
  await context.close();
});

test("a SharedWorker notices a tab closed without close(): it stops the tab's call and lets the store go with the last page", async () => {
  const context = await site.browser.newContext();
  const [tabA, tabB] = [await site.openTab(context), await site.openTab(context)];
  await openAndHang(tabA, "SharedWorker", "left");
  await tabB.evaluate(async () => {
    window.worker = new SharedWorker("/store-worker.js", { type: "module" });
    window.mem = await window.WorkerMemory.open(window.worker, { name: "left", storage: "memory" });
  });
  assert.equal(await tabB.evaluate(async () => (await window.mem.stats()).items), 1, "one store for both tabs");
  // The worker waits on a lock each open page holds; tab A's goes with it.
  const waits = () => tabB.evaluate(async () => (await navigator.locks.query()).pending.filter((l) => l.name.startsWith("memtide:page:")).length);
  assert.equal(await waits(), 2);
  await tabA.close();
  await tabB.waitForFunction(async () => (await navigator.locks.query()).pending.filter((l) => l.name.startsWith("memtide:page:")).length === 1, null, { timeout: 20000 });
  // The worker aborted tab A's call: its model download was dropped.
  await until(() => [...dropped].some((path) => path.startsWith("/hang/left/")), "tab A's download dropped");
  // Tab B, the last page, closes: the store ("memory") closes with it, so the next open starts empty.
  const items = await tabB.evaluate(async () => {
    await window.mem.close();
    const again = await window.WorkerMemory.open(window.worker, { name: "left", storage: "memory" });
    const { items } = await again.stats();
    await again.close();
    return items;
  });
  assert.equal(items, 0, "the store was let go when its last page closed");
  await context.close();
});

test("close() is no death: it resolves, and the page and the worker then hold no lock of the connection", async () => {
  const context = await site.browser.newContext();
  const tab = await site.openTab(context);
  const out = await tab.evaluate(async (settle) => {
    settle = eval(settle);
    const memtideLocks = async () => {
      const { held, pending } = await navigator.locks.query();
      return [...held, ...pending].filter((l) => l.name.startsWith("memtide:")).length;
    };
    const worker = new SharedWorker("/store-worker.js", { type: "module" });
    const mem = await window.WorkerMemory.open(worker, { name: "closing", storage: "memory" });
    // The worker takes its lock of the connection as it answers the open,
    // and asks for the page's after that: under load the open can resolve
    // before the worker's request is queued, so the count is awaited.
    let whileOpen = await memtideLocks();
    for (let waited = 0; whileOpen < 4 && waited < 20000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      whileOpen = await memtideLocks();
    }
    const closed = await settle(mem.close(), 20000);
    const afterClose = await settle(mem.stats(), 20000);
    let left = await memtideLocks();
    for (let waited = 0; left > 0 && waited < 20000; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      left = await memtideLocks();
    }
    return { whileOpen, closed, afterClose, left };
  }, settle);
  // Open: the page holds its lock and waits for the worker's, which the worker holds and waits for the page's.
  assert.deepEqual(out, { whileOpen: 4, closed: "resolved", afterClose: "CLOSED", left: 0 });
  await context.close();
});
