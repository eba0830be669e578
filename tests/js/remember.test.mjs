// Node tests of `remember` with a plain-function extractor, `applyOperations`
// and supersession through the npm package (dist/memtide, from
// scripts/build-pkg.sh), lexical-only: what the extractor is shown, one
// commit of its operations, a fact that changes, and every kind of bad
// answer refused with the store unchanged.
// Run: node --test tests/js/remember.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory, MemtideError } from "../../dist/memtide/node.js";
import { mapAdapter } from "./map-adapter.mjs";

const scope = { userId: "alice", workspaceId: "chat" };

/** Everything stored, soft-deleted and superseded memories included. */
async function everything(mem) {
  return (await mem.list({ includeDeleted: true, includeSuperseded: true, limit: 1000 })).items;
}

test("remember shows the extractor the related memories and applies its operations in one commit", async () => {
  const storage = mapAdapter();
  const mem = await Memory.open({ storage });
  const [cortado] = await mem.ingest([
    { text: "I take my coffee as a cortado", scope, kind: "preference" },
    { text: "My sister lives in Lisbon", scope, kind: "fact" },
  ]);
  const seen = [];
  const extractor = async ({ messages, memories }) => {
    seen.push({ messages, memories });
    const coffee = memories.find((m) => m.text.includes("cortado"));
    return [
      { op: "update", id: coffee.id, text: "Takes their coffee as a flat white" },
      { op: "add", text: "Drinks oat milk", kind: "preference", tags: ["coffee"] },
      { op: "none" },
    ];
  };
  const messages = [
    { role: "user", content: "I switched my coffee to flat whites with oat milk, by the way." },
    { role: "assistant", content: [{ type: "text", text: "Noted, flat whites with oat milk." }] },
  ];
  const done = await mem.remember(messages, { scope, extractor });
  assert.equal(seen.length, 1);
  assert.equal(seen[0].messages, messages);
  assert.ok(seen[0].memories.some((m) => m.id === cortado.id && m.kind === "preference"));
  assert.deepEqual(done.memories.map((m) => m.id), seen[0].memories.map((m) => m.id));
  assert.equal(done.added.length, 2);
  assert.deepEqual(done.superseded, [{ id: cortado.id, by: done.added[0] }]);
  assert.deepEqual(done.deleted, []);

  const old = await mem.get(cortado.id);
  assert.equal(old.supersededBy, done.added[0]);
  const successor = await mem.get(done.added[0]);
  assert.equal(successor.kind, "preference");
  assert.deepEqual(successor.supersedes, [cortado.id]);
  assert.deepEqual((await mem.history(cortado.id)).map((e) => [e.event, e.other]), [["created", undefined], ["superseded", done.added[0]]]);
  const hits = await mem.retrieve({ text: "coffee cortado flat white", scope, dryRun: true });
  assert.ok(!hits.some((h) => h.item.id === cortado.id));
  assert.ok(hits.some((h) => h.item.id === done.added[0]));
  assert.ok(!(await mem.list({ scope })).items.some((i) => i.id === cortado.id));

  // A reopened store agrees.
  const reopened = await Memory.open({ storage });
  assert.equal((await reopened.get(cortado.id)).supersededBy, done.added[0]);
});

test("a model's reply text is parsed, fences and prose around it included", async () => {
  const mem = await Memory.open({ storage: mapAdapter() });
  const done = await mem.remember([{ role: "user", content: "I moved to Berlin last month." }], {
    scope,
    extractor: async () => 'Sure! Here is what to remember:\n```json\n{"operations":[{"op":"add","text":"Lives in Berlin"}]}\n```',
  });
  assert.equal(done.added.length, 1);
  assert.equal((await mem.get(done.added[0])).kind, "fact");
  const none = await mem.remember([{ role: "user", content: "hi" }], { scope, extractor: () => ({ operations: [{ op: "none" }] }) });
  assert.deepEqual([none.added, none.superseded, none.deleted], [[], [], []]);
  // Chunks of files change with their file: they are not shown.
  await mem.syncFile({ scope, path: "notes/MEMORY.md", content: "# Notes\nThe espresso machine in Berlin is descaled on Sundays.\n" });
  const shown = await mem.remember([{ role: "user", content: "Is the espresso machine in Berlin descaled?" }], { scope, extractor: () => [] });
  assert.ok(shown.memories.length > 0 && shown.memories.every((m) => !m.text.includes("espresso")), JSON.stringify(shown.memories));
  // A long conversation is queried by its end, cut at a character.
  const long = await mem.remember([{ role: "user", content: `${"🙂".repeat(3000)} Berlin` }], { scope, extractor: () => [] });
  assert.ok(long.memories.some((m) => m.text === "Lives in Berlin"));
});

test("bad answers are INVALID_OPERATIONS and change nothing", async () => {
  const storage = mapAdapter();
  const mem = await Memory.open({ storage });
  const [cello] = await mem.ingest([{ text: "I am learning the cello", scope }]);
  const [bob] = await mem.ingest([{ text: "I am learning the cello too", scope: { userId: "bob", workspaceId: "chat" } }]);
  const before = await everything(mem);
  const messages = [{ role: "user", content: "I gave up the cello." }];
  const answers = {
    "not JSON": () => "I could not decide.",
    "unknown op": () => [{ op: "add", text: "ok" }, { op: "forget", id: cello.id }],
    "unknown id": () => [{ op: "add", text: "ok" }, { op: "delete", id: "01UNKNOWNMEMORY" }],
    "another user's id": () => [{ op: "add", text: "ok" }, { op: "delete", id: bob.id }],
    "an id not shown": () => [{ op: "add", text: "ok" }, { op: "update", id: bob.id, text: "x" }],
    "oversize text": () => [{ op: "add", text: "a".repeat(70_000) }],
    "too many": () => Array.from({ length: 101 }, (_, i) => ({ op: "add", text: `fact ${i}` })),
    "missing text": () => [{ op: "update", id: cello.id }],
    "extra field": () => [{ op: "add", text: "ok", confidence: 0.9 }],
    "not operations": () => 42,
  };
  for (const [what, extractor] of Object.entries(answers)) {
    const error = await mem.remember(messages, { scope, extractor }).then(() => null, (e) => e);
    assert.ok(error instanceof MemtideError, what);
    assert.equal(error.code, "INVALID_OPERATIONS", `${what}: ${error.message}`);
  }
  assert.deepEqual(await everything(mem), before);
  const reopened = await Memory.open({ storage });
  assert.deepEqual(await everything(reopened), before);
  // The caller's mistakes stay INVALID_INPUT.
  await assert.rejects(mem.remember(messages, { scope }), { code: "INVALID_INPUT" });
  await assert.rejects(mem.remember("hi", { scope, extractor: () => [] }), { code: "INVALID_INPUT" });
});

test("upsert with supersede keeps the old value; applyOperations takes a reply directly", async () => {
  const mem = await Memory.open({ storage: mapAdapter() });
  const [first] = await mem.upsert({ text: "I live in Porto", scope, key: "city" });
  const [second] = await mem.upsert({ text: "I moved to Berlin", scope, key: "city", supersede: true });
  assert.equal(second.outcome, "superseded");
  assert.equal((await mem.getByKey({ scope, key: "city" })).id, second.id);
  assert.equal((await mem.get(first.id)).supersededBy, second.id);
  const [plain] = await mem.upsert({ text: "I moved to Munich", scope, key: "city" });
  assert.deepEqual([plain.outcome, plain.id], ["replaced", second.id]);

  const done = await mem.applyOperations({ scope, allowed: [second.id], reply: JSON.stringify([{ op: "delete", id: second.id }]) });
  assert.deepEqual(done.deleted, [second.id]);
  assert.ok((await mem.get(second.id)).deletedAt);
  await assert.rejects(mem.applyOperations({ scope, allowed: [], reply: "no operations here" }), { code: "INVALID_OPERATIONS" });
});
