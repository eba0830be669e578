// Node tests of a store with a retention policy through the built npm
// package (dist/memtide, from scripts/build-pkg.sh): every write erases
// exactly the memories that expired, in a store of thousands (the engine
// finds them in its expiry index, `docs/memory-model.md`, "Erasure"), and
// a reopened store agrees. Run: node --test tests/js/retention.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory } from "../../dist/memtide/node.js";
import { mapAdapter } from "./map-adapter.mjs";

const DAY = 86_400_000;
const HOUR = 3_600_000;
const config = {
  retention: {
    days: 30,
    scopes: [
      { scope: { userId: "alice", workspaceId: "scratch" }, days: 2 },
      { scope: { userId: "alice", workspaceId: "legal" }, days: null },
    ],
  },
};

/** When an input expires, by the rules of `docs/memory-model.md`, "Expiry". */
function expiresAt(input) {
  const created = Date.parse(input.createdAt);
  const own = input.privacy?.retentionDays;
  const rules = { scratch: 2, legal: null };
  const ws = input.scope.workspaceId;
  const policy = ws in rules ? rules[ws] : config.retention.days;
  const ends = [own, policy].filter((days) => days != null).map((days) => created + days * DAY);
  return ends.length ? Math.min(...ends) : Infinity;
}

/** The ids of `memories` the store still holds, by `get`. */
async function held(mem, memories) {
  const found = [];
  for (const { id } of memories) {
    try {
      await mem.get(id);
      found.push(id);
    } catch (e) {
      assert.equal(e.code, "NOT_FOUND", `${id}: ${e.message}`);
    }
  }
  return found;
}

test("each write of a store with a policy erases exactly what expired, among thousands", async () => {
  let now = Date.parse("2026-01-01T00:00:00Z");
  const adapter = mapAdapter({ atomic: true });
  const mem = await Memory.open({ storage: adapter, config, now: () => now });
  const inputs = [];
  for (let i = 0; i < 4000; i++) {
    const workspaceId = ["home", "scratch", "legal", "work"][i % 4];
    // Ages over the last 40 days, some on a whole day (expiring exactly
    // when the clock below lands), some hours past it.
    const age = ((i * 7919) % 40) * DAY + (i % 3) * HOUR;
    inputs.push({
      text: `note ${i}: the ${["kettle", "ledger", "garden", "harbour"][i % 4]} of week ${i % 53}`,
      scope: { userId: "alice", workspaceId },
      createdAt: new Date(now - age).toISOString(),
      ...(i % 13 === 0 ? { privacy: { retentionDays: 1 + (i % 5) } } : {}),
    });
  }
  const results = await mem.ingest(inputs);
  assert.deepEqual(new Set(results.map((r) => r.outcome)), new Set(["added"]));
  const memories = results.map((r, n) => ({ id: r.id, ends: expiresAt(inputs[n]) }));
  const alive = (at) => memories.filter((m) => m.ends > at).map((m) => m.id);

  // The write purges before it applies: what the ingest stored already
  // expired is erased by the next write. The update and the delete touch
  // memories of `legal`, which are kept.
  for (const [days, write] of [
    [0, () => mem.ingest({ text: "a first write", scope: { userId: "alice", workspaceId: "home" } })],
    [1, () => mem.ingest({ text: "a second write", scope: { userId: "alice", workspaceId: "home" } })],
    [3, () => mem.update(memories[2].id, { pinned: true })],
    [26, () => mem.delete(memories[6].id)],
  ]) {
    now += days * DAY;
    const before = alive(now);
    await write();
    assert.deepEqual(await held(mem, memories), before, `after ${days} more days`);
    assert.ok(before.length > 0 && before.length < memories.length, `some expired, some kept: ${before.length}`);
  }
  assert.equal((await mem.purgeExpired()).purged, 0, "nothing expired is left");
  const kept = alive(now);
  await mem.close();

  const reopened = await Memory.open({ storage: adapter, config, now: () => now });
  assert.deepEqual(await held(reopened, memories), kept, "a reopened store agrees");
  // The next day on the reopened store: its index was built by the open.
  now += DAY;
  await reopened.ingest({ text: "a write after the reopen", scope: { userId: "alice", workspaceId: "home" } });
  assert.deepEqual(await held(reopened, memories), alive(now));
  await reopened.close();
});
