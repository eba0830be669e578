// The Durable Object example (examples/cloudflare-durable-object) in workerd
// through miniflare, on 127.0.0.1: each user routed to an object of their
// own (SQLite-backed, storage persisted to a directory), users' memories
// apart, and a user's memories kept across requests and across a restart
// of the Worker (a new miniflare over the same persisted storage).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assembleWorker, startWorker } from "../../examples/cloudflare-worker/assemble.mjs";

process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
process.env.WRANGLER_SEND_METRICS = "false";

const work = await mkdtemp(join(tmpdir(), "memtide-do-"));
after(() => rm(work, { recursive: true, force: true }));
const durableObjects = { USER_MEMORY: { className: "UserMemory", useSQLite: true } };
// The same scope for both users: only the routing keeps them apart.
const scope = { userId: "me", workspaceId: "chat" };

async function call(mf, user, endpoint, body) {
  const response = await mf.dispatchFetch(`http://127.0.0.1/users/${user}/${endpoint}`, body === undefined ? {} : {
    method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" },
  });
  return { status: response.status, body: await response.json() };
}
const texts = (hits) => hits.map((h) => h.item.text);

test("each user has an object of their own, kept across requests and restarts", async (t) => {
  let mf;
  t.after(() => mf?.dispose());
  const { bundle } = await assembleWorker(join(work, "bundle"), { example: "cloudflare-durable-object" });
  const persist = join(work, "state");
  mf = startWorker(bundle, { persist, durableObjects });

  const alice = await call(mf, "alice", "ingest", [
    { text: "Alice's bike is a green Brompton.", scope },
    { text: "Alice is allergic to hazelnuts.", scope },
  ]);
  assert.equal(alice.status, 200, JSON.stringify(alice.body));
  const bob = await call(mf, "bob", "ingest", { text: "Bob's bike is a red fixie.", scope });
  assert.equal(bob.status, 200, JSON.stringify(bob.body));

  assert.deepEqual(texts((await call(mf, "alice", "retrieve", { text: "bike", scope })).body), ["Alice's bike is a green Brompton."]);
  assert.deepEqual(texts((await call(mf, "bob", "retrieve", { text: "bike", scope })).body), ["Bob's bike is a red fixie."]);
  assert.deepEqual((await call(mf, "bob", "retrieve", { text: "hazelnuts", scope })).body, [], "Bob's object has none of Alice's memories");
  // A later request to the same user's object adds to the same store.
  await call(mf, "alice", "ingest", { text: "Alice works night shifts on Fridays.", scope });
  assert.equal((await call(mf, "alice", "stats")).body.items, 3);
  assert.equal((await call(mf, "bob", "stats")).body.items, 1);
  assert.equal((await call(mf, "nobody", "nothing")).status, 404);
  await mf.dispose();

  mf = startWorker(bundle, { persist, durableObjects }); // a new workerd over the persisted objects
  assert.equal((await call(mf, "alice", "stats")).body.items, 3, "Alice's memories after the restart");
  assert.deepEqual(texts((await call(mf, "alice", "retrieve", { text: "hazelnuts", scope })).body), ["Alice is allergic to hazelnuts."]);
  assert.equal((await call(mf, "bob", "stats")).body.items, 1, "Bob's after the restart");
  const block = await call(mf, "bob", "inject", { text: "which bike?", scope, budgetTokens: 100 });
  assert.ok(block.body.block.includes("red fixie") && !block.body.block.includes("Brompton"));
});
