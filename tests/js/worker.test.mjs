// The Cloudflare Worker example (examples/cloudflare-worker) in workerd,
// through miniflare (npm; workerd's binary comes from the npm registry), on
// 127.0.0.1: the three endpoints with the model read from a KV namespace,
// memories kept in KV across requests and across a restart of the Worker.
// The bundle is assembled as a bundler would (examples/cloudflare-worker/
// assemble.mjs). Prints its size.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { assembleWorker, putModel, startWorker } from "../../examples/cloudflare-worker/assemble.mjs";

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";

const modelDir = process.env.MEMTIDE_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { encoding: "utf8" }).trim().split("\n").pop();
const scope = { userId: "wes", workspaceId: "worker" };
const work = await mkdtemp(join(tmpdir(), "memtide-worker-"));
after(() => rm(work, { recursive: true, force: true }));

async function post(mf, path, body) {
  const response = await mf.dispatchFetch(`http://127.0.0.1${path}`, {
    method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" },
  });
  return { status: response.status, body: await response.json() };
}

test("the Worker ingests, retrieves and injects, and keeps memories across a restart", async (t) => {
  let mf;
  // Also after a failed assertion: a running workerd would keep the test
  // runner waiting for ever.
  t.after(() => mf?.dispose());
  const { bundle, size, wasm } = await assembleWorker(join(work, "bundle"));
  const persist = join(work, "kv");
  console.log(`worker bundle: ${(size.raw / 2 ** 20).toFixed(2)} MiB raw, ${(size.gzipped / 2 ** 20).toFixed(2)} MiB gzipped ` +
    `(.wasm ${(wasm.gzipped / 2 ** 20).toFixed(2)} MiB of it); the model stays in KV`);

  mf = startWorker(bundle, { persist });
  await putModel(mf, modelDir);

  const ingested = await post(mf, "/ingest", [
    { text: "The billing service retries failed charges three times.", scope, kind: "fact" },
    { text: "I want release notes written in plain English.", scope, kind: "preference", pinned: true },
    { text: "Our CDN purges take about thirty seconds.", scope },
  ]);
  assert.equal(ingested.status, 200, JSON.stringify(ingested.body));
  assert.deepEqual(ingested.body.map((r) => r.outcome), ["added", "added", "added"]);

  const retrieved = await post(mf, "/retrieve", { text: "how often do we retry a card payment?", scope, explain: true });
  assert.equal(retrieved.body[0].item.text, "The billing service retries failed charges three times.");
  assert.ok(retrieved.body[0].explain.semantic !== undefined, "the model was loaded from KV");

  const injected = await post(mf, "/inject", { text: "CDN purge time", scope, budgetTokens: 200 });
  assert.ok(injected.body.block.includes("thirty seconds") && injected.body.estimated === false);
  assert.equal(injected.body.used[0], ingested.body[1].id, "pinned first");

  const usage = await (await mf.dispatchFetch("http://127.0.0.1/memory")).json();
  assert.equal(usage.stats.items, 3);
  // About 27 MiB with the model (it holds about 24 live: its int8 word
  // table and weights), a few MiB without.
  assert.ok(usage.wasmMemoryBytes > 24 * 2 ** 20, "the loaded model lives in WebAssembly memory");
  console.log(`WebAssembly memory with the model and 3 memories: ${(usage.wasmMemoryBytes / 2 ** 20).toFixed(1)} MiB`);

  const bad = await post(mf, "/inject", { text: "x", scope });
  assert.deepEqual([bad.status, bad.body.error.code], [400, "INVALID_INPUT"]);
  const before = await post(mf, "/retrieve", { text: "release notes style", scope, dryRun: true });
  const memories = await mf.getKVNamespace("MEMORIES");
  const keys = (await memories.list()).keys.map((k) => k.name);
  assert.ok(keys.includes("meta/manifest") && keys.every((k) => !k.startsWith("journal/")));
  await mf.dispose();

  mf = startWorker(bundle, { persist }); // a new isolate: everything comes back from KV
  const again = await post(mf, "/retrieve", { text: "release notes style", scope });
  assert.equal(again.body[0].item.text, "I want release notes written in plain English.");
  assert.equal(again.body[0].item.id, before.body[0].item.id);
  assert.equal(again.body[0].item.usageCount, before.body[0].item.usageCount + 1,
    "usage marked by the first isolate was persisted");
});
