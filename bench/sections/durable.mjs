// Section 8, Durable Object cold start (issue 21): the example of
// examples/cloudflare-durable-object (one SQLite-backed object per user,
// `memtide/durable-object`), assembled with the built package as
// tests/js/durable-object.test.mjs does, in workerd through miniflare with
// its storage persisted to a temporary directory. One user's object gets
// `size` memories in ingests of 1,000; miniflare is disposed; then each run
// starts a new miniflare over the same directory and times:
//
// - workerd start: `new Miniflare(...)` until `ready`;
// - object start → first answer: the first request, a `retrieve` (dryRun, so
//   every run opens the same store), from dispatch to its JSON: the object is
//   created by it, opens the store from SQLite and answers;
// - a second `retrieve` on the now-open object, for comparison;
// - the same first request to an object of another user, whose store is
//   empty, in a miniflare of its own: the part of the first answer that
//   does not depend on the store (isolate, the .wasm's instantiation, the
//   object's creation).
//
// The first run is a warm-up (not counted). Timings are from Node, outside
// workerd (inside, the clock only moves on I/O); beside them, the CPU time
// workerd's processes used during the first answer (from /proc, 10 ms
// ticks), which a busy machine inflates less than wall time.
import fs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { memoryCorpus } from "../lib/corpus.mjs";
import { median } from "../lib/stats.mjs";

const SCOPE = { userId: "bench", workspaceId: "main" };
const FILL_BATCH = 1000;
const durableObjects = { USER_MEMORY: { className: "UserMemory", useSQLite: true } };

async function call(mf, endpoint, body) {
  const response = await mf.dispatchFetch(`http://127.0.0.1/users/bench/${endpoint}`, body === undefined ? {} : {
    method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" },
  });
  const json = await response.json();
  if (response.status !== 200) throw new Error(`durable: ${endpoint} answered ${response.status}: ${JSON.stringify(json)}`);
  return json;
}

/**
 * CPU seconds (user + system) used so far by the workerd processes under
 * this one (Linux /proc; null elsewhere): less sensitive than wall time to
 * a busy machine.
 */
function workerdCpuSeconds() {
  if (!fs.existsSync("/proc/self/stat")) return null;
  const children = new Map();
  for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      children.set(Number(pid), { name, ppid: Number(fields[1]), cpu: (Number(fields[11]) + Number(fields[12])) / 100 });
    } catch { /* gone */ }
  }
  const mine = (pid) => { for (let p = pid; p > 1; p = children.get(p)?.ppid ?? 0) if (p === process.pid) return true; return false; };
  let cpu = 0;
  for (const [pid, c] of children) if (c.name.startsWith("workerd") && mine(pid)) cpu += c.cpu;
  return cpu;
}

const spread = (samples) => ({ median: median(samples), min: Math.min(...samples), max: Math.max(...samples), samples });

export async function runDurable({ size, runs, log }) {
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
  process.env.WRANGLER_SEND_METRICS = "false";
  const { assembleWorker, startWorker } = await import("../../examples/cloudflare-worker/assemble.mjs");
  const work = await mkdtemp(join(tmpdir(), "memtide-bench-do-"));
  try {
    const { bundle } = await assembleWorker(join(work, "bundle"), { example: "cloudflare-durable-object" });
    const persist = join(work, "state");
    const { texts, queries } = memoryCorpus(size, 1);
    const query = { text: queries[0].text, scope: SCOPE, limit: 10, dryRun: true };

    log(`durable: storing ${size} memories in one Durable Object`);
    let mf = startWorker(bundle, { persist, durableObjects });
    const fillStart = performance.now();
    for (let i = 0; i < size; i += FILL_BATCH) {
      await call(mf, "ingest", texts.slice(i, i + FILL_BATCH).map((text) => ({ text, scope: SCOPE })));
    }
    const fillMs = performance.now() - fillStart;
    const { items } = await call(mf, "stats");
    if (items !== size) throw new Error(`durable: the object holds ${items} memories, not ${size}`);
    await mf.dispose();

    const startMs = [];
    const firstMs = [];
    const secondMs = [];
    const emptyMs = [];
    const firstCpuMs = [];
    for (let i = 0; i <= runs; i++) {
      const t0 = performance.now();
      mf = startWorker(bundle, { persist, durableObjects });
      await mf.ready;
      const cpu1 = workerdCpuSeconds();
      const t1 = performance.now();
      const hits = await call(mf, "retrieve", query);
      const t2 = performance.now();
      const cpu2 = workerdCpuSeconds();
      await call(mf, "retrieve", query);
      const t3 = performance.now();
      await mf.dispose();
      if (hits.length === 0) throw new Error("durable: the first query found nothing");
      mf = startWorker(bundle, { persist, durableObjects });
      await mf.ready;
      const t4 = performance.now();
      await mf.dispatchFetch("http://127.0.0.1/users/empty/retrieve", {
        method: "POST", body: JSON.stringify(query), headers: { "content-type": "application/json" },
      }).then((r) => r.json());
      const t5 = performance.now();
      await mf.dispose();
      log(`durable: run ${i}${i === 0 ? " (warm-up)" : ""}: workerd ${(t1 - t0).toFixed(0)} ms, first answer ${(t2 - t1).toFixed(0)} ms, second ${(t3 - t2).toFixed(0)} ms, empty object's first answer ${(t5 - t4).toFixed(0)} ms; workerd CPU during the first answer ${((cpu2 - cpu1) * 1000).toFixed(0)} ms`);
      if (i === 0) continue;
      startMs.push(t1 - t0);
      firstMs.push(t2 - t1);
      secondMs.push(t3 - t2);
      emptyMs.push(t5 - t4);
      if (cpu1 != null) firstCpuMs.push((cpu2 - cpu1) * 1000);
    }
    return { size, runs, fillMs, workerdStart: spread(startMs), firstAnswer: spread(firstMs), secondAnswer: spread(secondMs), emptyFirstAnswer: spread(emptyMs),
      firstAnswerCpu: firstCpuMs.length ? spread(firstCpuMs) : null };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
