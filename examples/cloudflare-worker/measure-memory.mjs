// Measures the Worker example's memory in workerd (through miniflare) with
// the model loaded and 10,000 memories ingested, against Workers' 128 MB
// isolate limit: the WebAssembly instance's linear memory (GET /memory,
// memtide's data and the model: the bulk of the isolate), and the resident
// memory of the workerd process (a loose upper bound: it also holds the
// runtime, compiled code and miniflare's own services).
//
//   bash scripts/build-pkg.sh && node examples/cloudflare-worker/measure-memory.mjs [COUNT]
//
// Memories are pairs of LoCoMo turns (tests/data/locomo_dev.json), ingested
// 250 per request. Results go to docs/edge.md by hand.
import { readFile, readdir } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { assembleWorker, putModel, startWorker } from "./assemble.mjs";

const count = Number(process.argv[2] ?? 10_000);
const root = new URL("../../", import.meta.url);
const modelDir = process.env.MEMTIDE_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { cwd: root, encoding: "utf8" }).trim().split("\n").pop();

async function isolateMemory() {
  const { wasmMemoryBytes } = await (await mf.dispatchFetch("http://127.0.0.1/memory")).json();
  return `WebAssembly memory ${(wasmMemoryBytes / 2 ** 20).toFixed(1)} MiB, workerd process RSS ${await workerdRss()}`;
}

async function workerdRss() {
  let kib = 0;
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const status = await readFile(`/proc/${pid}/status`, "utf8");
      if (/^Name:\s+workerd$/m.test(status)) kib += Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    } catch { /* the process ended */ }
  }
  return (kib / 1024).toFixed(1) + " MiB";
}

const { bundle } = await assembleWorker();
const mf = startWorker(bundle);
const post = async (path, body) => (await mf.dispatchFetch(`http://127.0.0.1${path}`, {
  method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" },
})).json();
await putModel(mf, modelDir);

const scope = { userId: "load", workspaceId: "test" };
await post("/retrieve", { text: "warm up", scope });
console.log(`after the model loaded: ${await isolateMemory()}`);

const data = JSON.parse(await readFile(new URL("tests/data/locomo_dev.json", root), "utf8"));
const turns = data.conversations.flatMap((c) => c.sessions.flatMap((s) => s.turns.map((t) => t.text)));
const started = Date.now();
let added = 0;
for (let i = 0; i < count; i += 250) {
  const batch = [];
  for (let k = i; k < Math.min(count, i + 250); k++) {
    // Distinct pairs for the first n² inputs (n turns).
    const first = k % turns.length;
    const second = (Math.floor(k / turns.length) * 31 + first + 1) % turns.length;
    batch.push({ text: `${turns[first]} ${turns[second]}`, scope });
  }
  const results = await post("/ingest", batch);
  if (!Array.isArray(results)) throw new Error(JSON.stringify(results));
  added += results.filter((r) => r.outcome === "added").length;
  if ((i + 250) % 2500 === 0) {
    console.log(`  ${i + 250} inputs in ${((Date.now() - started) / 1000).toFixed(0)} s: ${await isolateMemory()}`);
  }
}
const seconds = (Date.now() - started) / 1000;
const hits = await post("/retrieve", { text: "adoption agencies", scope });
console.log(`after ${added} memories (${count} inputs, ${seconds.toFixed(0)} s): ${await workerdRss()}; ` +
  `a query answers ${hits.length} hits`);
console.log(`  ${await isolateMemory()}`);
await mf.dispose();
