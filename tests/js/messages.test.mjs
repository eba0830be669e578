// Node tests of `ingestMessages` and the `role`/`speaker` fields through the
// npm package (dist/memtide, from scripts/build-pkg.sh), lexical-only: the
// shapes of OpenAI, Anthropic and the AI SDK as JavaScript holds them
// (a `Date`, a `URL`), order, filters, errors and a reopen.
// Run: node --test tests/js/messages.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory, MemtideError } from "../../dist/memtide/node.js";
import { mapAdapter } from "./map-adapter.mjs";

const scope = { userId: "alice", workspaceId: "chat" };

test("a conversation of mixed shapes becomes memories in order, with who said them", async () => {
  const storage = mapAdapter();
  const mem = await Memory.open({ storage });
  const at = new Date("2024-05-01T10:00:00Z");
  const results = await mem.ingestMessages([
    { role: "system", content: "Be brief." },
    { role: "user", name: "Caroline", content: "I started pottery classes on Tuesdays.", createdAt: at },
    { role: "assistant", content: [{ type: "text", text: "Pottery is a calm hobby." }, { type: "tool_use", id: "t1", name: "note", input: {} }] },
    { id: "ui1", role: "user", parts: [{ type: "step-start" }, { type: "text", text: "My teacher is <private>Mrs Olsen</private> Ingrid." }] },
    { role: "user", content: [{ type: "image", image: new URL("https://example.com/vase.png") }] },
  ], { scope, speakers: { assistant: "Bot" }, createdAt: "2024-05-01T10:00:00Z" });
  assert.deepEqual(results.map((r) => [r.message, r.part, r.outcome]), [[1, 0, "added"], [2, 0, "added"], [3, 1, "added"]]);
  const items = await Promise.all(results.map((r) => mem.get(r.id)));
  assert.deepEqual(items.map((i) => [i.role, i.speaker]), [["user", "Caroline"], ["assistant", "Bot"], ["user", undefined]]);
  assert.equal(items[2].text, "My teacher is Ingrid.");
  assert.equal(items[2].source.ref, "ui1");
  assert.equal(items[1].follows, items[0].id);
  assert.equal(items[2].follows, items[1].id);
  assert.ok(items.every((i) => i.createdAt === "2024-05-01T10:00:00.000Z"));

  const hits = await mem.retrieve({ text: "pottery", scope, roles: ["assistant"], explain: true });
  assert.deepEqual(hits.map((h) => h.item.text), ["Pottery is a calm hobby."]);
  assert.deepEqual(hits[0].policy.filters, ["roles"]);
  assert.equal((await mem.list({ roles: ["user"] })).items.length, 2);
  await mem.close();

  const again = await Memory.open({ storage });
  assert.deepEqual(await again.get(items[0].id), items[0]);
  // `update` corrects who said it: the role filter, the speaker's name and the history follow.
  const fixed = await again.update(items[1].id, { role: "user", speaker: "Ingrid" });
  assert.deepEqual([fixed.role, fixed.speaker], ["user", "Ingrid"]);
  assert.equal((await again.list({ roles: ["user"] })).items.length, 3);
  // The two said by or naming Ingrid come first (a turn next to them may follow, with a share of their score).
  const ingrid = (await again.retrieve({ text: "Ingrid", scope })).map((h) => h.item.id);
  assert.deepEqual(ingrid.slice(0, 2).sort(), [items[1].id, items[2].id].sort());
  assert.deepEqual((await again.history(items[1].id)).at(-1).fields, ["role", "speaker"]);
  assert.equal((await again.update(items[1].id, { speaker: "" })).speaker, undefined);
  await assert.rejects(again.update(items[1].id, { role: "narrator" }), (e) => e instanceof MemtideError && e.code === "INVALID_INPUT");
  await again.close();
});

test("tool parts, images and system messages come in when asked for", async () => {
  const mem = await Memory.open({ storage: "memory" });
  const results = await mem.ingestMessages([
    { role: "system", content: "Be brief." },
    { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "weather", input: { city: "Oslo" } }] },
    { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "weather", output: { type: "text", value: "rain" } }] },
    { role: "user", content: [{ type: "image", image: new URL("https://example.com/vase.png") }] },
  ], { scope, include: ["text", "toolCall", "toolResult", "image"], roles: ["user", "assistant", "system"] });
  const texts = await Promise.all(results.map(async (r) => (await mem.get(r.id)).text));
  assert.deepEqual(texts, ["Be brief.", 'tool call weather: {"city":"Oslo"}', "tool result weather: rain", "[image https://example.com/vase.png]"]);
  await mem.close();
});

test("bad messages and options are INVALID_INPUT and store nothing", async () => {
  const mem = await Memory.open({ storage: "memory" });
  const bad = [
    [[{ role: "narrator", content: "x" }], { scope }, /messages\[0\]: role/],
    [[{ role: "user", content: 7 }], { scope }, /content must be/],
    [{ role: "user", content: "x" }, { scope }, /messages must be an array/],
    [[{ role: "user", content: "x" }], { scope, include: ["audio"] }, /options/],
    [[{ role: "user", content: "x" }], { scope, speakers: { user: "" } }, /speaker/],
    [[{ role: "user", content: "x" }], { scope: { userId: "", workspaceId: "w" } }, /userId/],
  ];
  for (const [messages, options, pattern] of bad) {
    await assert.rejects(mem.ingestMessages(messages, options), (error) => {
      assert.ok(error instanceof MemtideError);
      assert.equal(error.code, "INVALID_INPUT", error.message);
      assert.match(error.message, pattern);
      return true;
    });
  }
  assert.equal((await mem.stats()).items, 0);
  await mem.close();
});

test("two speakers saying the same words are two memories; the same speaker again merges, after a reopen too", async () => {
  const storage = mapAdapter();
  let mem = await Memory.open({ storage });
  const said = (name) => ({ role: "user", name, content: "I love hiking" });
  const results = await mem.ingestMessages([said("Caroline"), said("Melanie"), said("Caroline")], { scope });
  assert.deepEqual(results.map((r) => [r.outcome, r.reason]), [["added", undefined], ["added", undefined], ["merged", "duplicate"]]);
  assert.equal(results[2].id, results[0].id);
  const items = await Promise.all(results.slice(0, 2).map((r) => mem.get(r.id)));
  assert.deepEqual(items.map((i) => i.speaker), ["Caroline", "Melanie"]);
  const hits = await mem.retrieve({ text: "hiking", scope, dryRun: true });
  assert.deepEqual(new Set(hits.map((h) => h.item.speaker)), new Set(["Caroline", "Melanie"]));
  // A speaker's patch that would make a second copy of a voice is refused.
  await assert.rejects(mem.update(results[1].id, { speaker: "Caroline" }), (e) => e instanceof MemtideError && e.code === "INVALID_INPUT");
  await mem.close();

  mem = await Memory.open({ storage });
  const again = await mem.ingestMessages([said("Melanie"), { role: "user", content: "I love hiking" }], { scope });
  assert.deepEqual(again.map((r) => [r.outcome, r.id === results[1].id]), [["merged", true], ["added", false]]);
  assert.equal((await mem.stats()).items, 3);
  await mem.close();
});
