// Tests of the Deno example, run by `deno test` (scripts/test-deno.sh):
// the three endpoints with the model, persistence across a restart, the
// Deno KV adapter's chunking, two writers on one database, a batch too
// large for one atomic operation, and a value whose chunks are more than
// one atomic operation takes (written and deleted in steps). The adapter's
// conformance suite runs in tests/apps/adapters-deno.test.mjs.
import { createApp, readModel } from "./main.js";
import { DenoKvStorage } from "memtide/deno-kv";
import { Memory } from "memtide";

function assert(condition, message) {
  if (!condition) throw new Error(`assertion failed: ${message}`);
}
function assertEquals(actual, expected, message = "") {
  const [a, e] = [JSON.stringify(actual), JSON.stringify(expected)];
  if (a !== e) throw new Error(`${message} expected ${e}, got ${a}`);
}

const modelDir = Deno.env.get("MEMTIDE_MODEL_DIR");
const model = modelDir ? await readModel(modelDir) : undefined;
const scope = { userId: "dina", workspaceId: "edge" };

async function post(handler, path, body) {
  const response = await handler(new Request(`http://localhost${path}`, {
    method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" },
  }));
  return { status: response.status, body: await response.json() };
}

Deno.test("ingest, retrieve and inject over HTTP, then again after a restart", async () => {
  assert(model, "MEMTIDE_MODEL_DIR must name the model files");
  const path = await Deno.makeTempFile({ suffix: ".kv" });
  let kv = await Deno.openKv(path);
  let app = await createApp({ kv, model });
  const ingested = await post(app.handler, "/ingest", [
    { text: "Our staging cluster runs in Frankfurt.", scope, kind: "fact" },
    { text: "I prefer answers with code samples in TypeScript.", scope, kind: "preference", pinned: true },
    { text: "The on-call rotation changes every Monday.", scope },
  ]);
  assertEquals(ingested.status, 200);
  assertEquals(ingested.body.map((r) => r.outcome), ["added", "added", "added"]);
  const retrieved = await post(app.handler, "/retrieve", { text: "where is staging hosted?", scope });
  assertEquals(retrieved.body[0].item.text, "Our staging cluster runs in Frankfurt.");
  const injected = await post(app.handler, "/inject", { text: "where is staging?", scope, budgetTokens: 200 });
  assert(injected.body.block.includes("Frankfurt") && !injected.body.estimated, "cited block, real tokens");
  assert(injected.body.used[0] === ingested.body[1].id, "the pinned memory comes first");
  const bad = await post(app.handler, "/retrieve", { text: "x" });
  assertEquals([bad.status, bad.body.error.code], [400, "INVALID_INPUT"]);
  await app.mem.close();
  kv.close();

  kv = await Deno.openKv(path); // a new process on the same database
  app = await createApp({ kv, model });
  const again = await post(app.handler, "/retrieve", { text: "when does on-call change?", scope });
  assertEquals(again.body[0].item.text, "The on-call rotation changes every Monday.");
  assertEquals((await app.mem.stats()).items, 3);
  await app.mem.close();
  kv.close();
  await Deno.remove(path);
});

Deno.test("the adapter chunks values past Deno KV's 64 KiB and lists by prefix", async () => {
  const kv = await Deno.openKv(":memory:");
  const storage = new DenoKvStorage(kv, ["t"]);
  const big = new Uint8Array(200_000).map((_, i) => i % 251);
  await storage.put("item/big", big);
  await storage.put("item/small", new Uint8Array([1, 2, 3]));
  await storage.put("vec/x", new Uint8Array([9]));
  assertEquals(Array.from(await storage.get("item/big")), Array.from(big));
  assertEquals((await storage.list("item/")).sort(), ["item/big", "item/small"]);
  await storage.put("item/big", new Uint8Array([7])); // shrinks: stale chunks go
  assertEquals(Array.from(await storage.get("item/big")), [7]);
  let chunks = 0;
  for await (const _ of kv.list({ prefix: ["t", "c", "item/big"] })) chunks++;
  assertEquals(chunks, 1);
  await storage.delete("item/big");
  assertEquals(await storage.get("item/big"), null);
  kv.close();
});

Deno.test("two writers on one database keep each other's memories", async () => {
  // Two stores, as two isolates would have, over one database (one handle:
  // Deno's local SQLite backend refuses concurrent writes from two handles
  // of one process with "database is locked").
  const path = await Deno.makeTempFile({ suffix: ".kv" });
  const kvA = await Deno.openKv(path);
  const a = await Memory.open({ storage: new DenoKvStorage(kvA) });
  const b = await Memory.open({ storage: new DenoKvStorage(kvA) });
  const writes = [];
  for (let i = 0; i < 10; i++) {
    writes.push(a.ingest({ text: `Writer A remembers fact ${i}.`, scope }));
    writes.push(b.ingest({ text: `Writer B remembers fact ${i}.`, scope }));
  }
  await Promise.all(writes);
  await a.refresh();
  assertEquals((await a.stats()).items, 20);
  const fresh = await Memory.open({ storage: new DenoKvStorage(kvA) });
  assertEquals((await fresh.stats()).items, 20);
  kvA.close();
  await Deno.remove(path);
});

Deno.test("a batch beyond one atomic operation is journaled and lands whole", async () => {
  const kv = await Deno.openKv(":memory:");
  const mem = await Memory.open({ storage: new DenoKvStorage(kv) });
  const inputs = Array.from({ length: 1200 }, (_, i) => ({ text: `Bulk memory ${i} about item ${i * 13}.`, scope }));
  const results = await mem.ingest(inputs);
  assertEquals(results.filter((r) => r.outcome === "added").length, 1200);
  const reopened = await Memory.open({ storage: new DenoKvStorage(kv) });
  assertEquals((await reopened.stats()).items, 1200);
  let journal = 0;
  for await (const entry of kv.list({ prefix: ["memtide", "k"] })) if (entry.key.at(-1).startsWith("journal/")) journal++;
  assertEquals(journal, 0, "journal cleaned up");
  kv.close();
});

Deno.test("a value of more chunks than one atomic operation takes is written and deleted in steps", async () => {
  const kv = await Deno.openKv(":memory:");
  const storage = new DenoKvStorage(kv, ["t"]);
  const huge = new Uint8Array(1001 * 60 * 1024).map((_, i) => (i * 7) % 253);
  await storage.put("seg/huge", huge);
  const back = await storage.get("seg/huge");
  assert(back.length === huge.length && back.every((b, i) => b === huge[i]), "read back whole");
  await storage.delete("seg/huge");
  assertEquals(await storage.get("seg/huge"), null);
  let left = 0;
  for await (const _ of kv.list({ prefix: ["t"] })) left++;
  assertEquals(left, 0, "no chunk left");
  kv.close();
});
