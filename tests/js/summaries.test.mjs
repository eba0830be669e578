// Node tests of `memory.summarize` through the npm package (dist/memtide,
// from scripts/build-pkg.sh), lexical-only: the summarizer's input, the
// stored summary linked to its sources, replacement in place, a hard
// delete of a source erasing it from every stored byte, errors, abort.
// Run: node --test tests/js/summaries.test.mjs
import { createHash } from "node:crypto";
import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory, MemtideError } from "../../dist/memtide/node.js";
import { mapAdapter } from "./map-adapter.mjs";

const scope = { userId: "alice", workspaceId: "chat" };

async function conversation(mem) {
  return mem.ingestMessages([
    { role: "user", content: "We are planning a trip to Lisbon in June." },
    { role: "assistant", content: "Lisbon in June is lovely; the Santo Antonio festival is on." },
    { role: "user", content: "The door code of the flat is 4417." },
  ], { scope: { ...scope, sessionId: "s1" } });
}

function storedText(storage) {
  return [...storage.map.values()].map((v) => Buffer.from(v).toString("latin1")).join("\n");
}

test("summarize hands the summarizer the session's memories and stores its summary linked to them", async () => {
  const storage = mapAdapter();
  const mem = await Memory.open({ storage });
  const turns = await conversation(mem);
  await mem.ingest({ text: "Another session talked about the cat.", scope: { ...scope, sessionId: "s2" } });
  const calls = [];
  const summary = await mem.summarize({
    scope,
    session: "s1",
    summarizer: async (input) => {
      calls.push(input);
      return `Planning a June trip to Lisbon (${input.memories.length} turns); flat door code 4417.`;
    },
  });
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0].memories.map((m) => m.text), [
    "We are planning a trip to Lisbon in June.",
    "Lisbon in June is lovely; the Santo Antonio festival is on.",
    "The door code of the flat is 4417.",
  ]);
  assert.equal(calls[0].previous, undefined);
  assert.deepEqual(calls[0].scope, { ...scope, sessionId: "s1" });
  assert.equal(summary.kind, "summary");
  assert.deepEqual(summary.scope, { ...scope, sessionId: "s1" });
  assert.deepEqual(summary.summaryOf, turns.map((t) => t.id).sort());

  // Retrieved and injected like any memory.
  const injected = await mem.inject({ text: "What did we plan for the Lisbon trip?", scope: { ...scope, sessionId: "s1" }, budgetTokens: 300 });
  assert.ok(injected.used.includes(summary.id), injected.block);

  // Again: the previous summary is given, and replaced in place.
  const again = await mem.summarize({
    scope: { ...scope, sessionId: "s1" },
    summarizer: ({ previous, memories }) => ({ text: `${previous.text} Festival noted.`, sources: [memories[1].id] }),
  });
  assert.equal(again.id, summary.id);
  assert.deepEqual(again.summaryOf, [turns[1].id]);
  assert.equal((await mem.list({ kinds: ["summary"] })).items.length, 1);
  assert.ok((await mem.history(summary.id)).some((e) => e.event === "replaced"));

  // A workspace summary covers every session.
  const all = await mem.summarize({ scope, summarizer: ({ memories }) => `${memories.length} memories.` });
  assert.equal(all.text, "4 memories.");
});

test("a hard delete of a source erases its summaries from every stored byte", async () => {
  const storage = mapAdapter();
  const mem = await Memory.open({ storage });
  const turns = await conversation(mem);
  const summary = await mem.summarize({ scope, session: "s1", summarizer: () => "Trip to Lisbon; door code 4417." });
  assert.match(storedText(storage), /door code 4417\./);
  await mem.delete(turns[2].id, { hard: true });
  await assert.rejects(mem.get(summary.id), (e) => e instanceof MemtideError && e.code === "NOT_FOUND");
  assert.doesNotMatch(storedText(storage), /4417/);
  const reopened = await Memory.open({ storage });
  assert.equal((await reopened.list({ kinds: ["summary"] })).items.length, 0);
});

test("nothing to summarize, a null summary and a bad summarizer change nothing", async () => {
  const mem = await Memory.open({ storage: "memory" });
  let called = false;
  assert.equal(await mem.summarize({ scope, summarizer: () => { called = true; return "x"; } }), null);
  assert.equal(called, false, "no model call for an empty scope");
  await conversation(mem);
  assert.equal(await mem.summarize({ scope, summarizer: () => null }), null);
  const invalid = (e) => e instanceof MemtideError && e.code === "INVALID_INPUT";
  await assert.rejects(mem.summarize({ scope }), invalid);
  await assert.rejects(mem.summarize({ scope, summarizer: () => 42 }), invalid);
  await assert.rejects(mem.summarize({ scope, summarizer: () => ({ text: "x", sources: "all" }) }), invalid);
  await assert.rejects(mem.summarize({ scope: { ...scope, sessionId: "a" }, session: "b", summarizer: () => "x" }), invalid);
  await assert.rejects(mem.summarize({ scope, session: "s1", summarizer: () => "" }), invalid);
  await assert.rejects(
    mem.summarize({ scope, session: "s1", summarizer: () => ({ text: "x", sources: ["01HZZZZZZZZZZZZZZZZZZZZZZZ"] }) }),
    (e) => e instanceof MemtideError && e.code === "NOT_FOUND",
  );
  const failing = mem.summarize({ scope, summarizer: async () => { throw new Error("model down"); } });
  await assert.rejects(failing, /model down/);
  const controller = new AbortController();
  await assert.rejects(
    mem.summarize({ scope, signal: controller.signal, summarizer: ({ signal }) => { controller.abort(); assert.ok(signal.aborted); return "late"; } }),
    (e) => e instanceof MemtideError && e.code === "ABORTED",
  );
  assert.equal((await mem.list({ kinds: ["summary"] })).items.length, 0);
});

test("a superseded source erases its summary; deleteAll counts the summaries that go with their sources; a restore brings a withdrawn summary back", async () => {
  const storage = mapAdapter();
  const mem = await Memory.open({ storage });
  const ws = scope;
  const [coffee] = await mem.ingest({ text: "I take my coffee as a cortado.", scope: ws });
  const old = await mem.storeSummary({ scope: ws, text: "Drinks cortados.", sources: [coffee.id] });
  const done = await mem.applyOperations({
    scope: ws,
    allowed: [coffee.id],
    reply: JSON.stringify([{ op: "update", id: coffee.id, text: "I take my coffee as a flat white." }]),
  });
  assert.equal(done.superseded[0].id, coffee.id);
  await assert.rejects(mem.get(old.id), (e) => e instanceof MemtideError && e.code === "NOT_FOUND");
  assert.ok(!storedText(storage).includes("Drinks cortados."), "no byte of the old summary");

  // A workspace summary of a session's turns is outside a filter naming the session.
  const turns = await conversation(mem);
  const ids = turns.map((t) => t.id);
  const summary = await mem.storeSummary({ scope: ws, text: "A June trip to Lisbon.", sources: ids });
  const result = await mem.deleteAll({ scope: { ...scope, sessionId: "s1" } });
  assert.deepEqual(result, { deleted: 4, hard: false, summaries: 1 });
  const withdrawn = await mem.get(summary.id);
  assert.ok(withdrawn.deletedAt);
  assert.equal(withdrawn.withdrawn, true);
  assert.equal((await mem.history(summary.id)).at(-1).event, "withdrawn");
  for (const [i, id] of ids.entries()) {
    await mem.update(id, { deleted: false });
    assert.equal(Boolean((await mem.get(summary.id)).deletedAt), i < ids.length - 1, `after restoring ${i + 1}`);
  }
  assert.equal((await mem.history(summary.id)).at(-1).event, "restored");
  assert.equal((await mem.get(summary.id)).withdrawn, undefined, "the mark goes with the restore");
  await mem.close();
});

test("a summary withdrawn longer ago than its history keeps comes back with its source, after a reopen too", async () => {
  const storage = mapAdapter();
  let mem = await Memory.open({ storage });
  const [door] = await mem.ingest({ text: "The door code of the flat is 4417.", scope });
  const summary = await mem.storeSummary({ scope, text: "Door code 4417.", sources: [door.id] });
  await mem.delete(door.id);
  // 40 later events: the `withdrawn` event drops out of the 32 kept.
  for (let i = 0; i < 40; i++) await mem.update(summary.id, { pinned: i % 2 === 0 });
  assert.ok(!(await mem.history(summary.id)).some((e) => e.event === "withdrawn"));
  assert.equal((await mem.get(summary.id)).withdrawn, true);
  await mem.close();
  mem = await Memory.open({ storage });
  await mem.update(door.id, { deleted: false });
  const back = await mem.get(summary.id);
  assert.equal(back.deletedAt, undefined);
  assert.equal(back.withdrawn, undefined);
  assert.equal((await mem.history(summary.id)).at(-1).event, "restored");
  await mem.close();
});

test("import refuses a summary of a superseded memory and changes nothing", async () => {
  const mem = await Memory.open({ storage: mapAdapter() });
  const [coffee] = await mem.ingest({ text: "I take my coffee as a cortado.", scope });
  await mem.storeSummary({ scope, text: "Drinks cortados.", sources: [coffee.id] });
  const doc = JSON.parse(await mem.export());
  const item = doc.items.find((i) => i.id === coffee.id);
  item.supersededAt = item.updatedAt;
  const items = JSON.stringify(doc.items);
  doc.checksum = createHash("sha256").update(items).digest("hex");
  const fresh = await Memory.open({ storage: mapAdapter() });
  await assert.rejects(
    fresh.import(JSON.stringify(doc)),
    (e) => e instanceof MemtideError && e.code === "INVALID_INPUT" && /superseded/.test(e.message),
  );
  assert.equal((await fresh.stats()).items, 0);
  await mem.close();
  await fresh.close();
});
