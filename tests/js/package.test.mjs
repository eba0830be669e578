// Node tests of the built npm package (dist/memtide, from scripts/build-pkg.sh):
// the typed API end to end, with the model, over in-memory and injected
// storage, and every kind of bad input. Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";

import { Memory, MemtideError, wasmMemoryBytes } from "../../dist/memtide/node.js";
import { rejectsWith } from "./rejects.mjs";
import { mapAdapter } from "./map-adapter.mjs";

const modelDir = process.env.MEMTIDE_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { encoding: "utf8" }).trim().split("\n").pop();
const model = {
  onnx: await readFile(`${modelDir}/model.onnx`),
  tokenizer: await readFile(`${modelDir}/tokenizer.json`, "utf8"),
};

const home = { userId: "alice", workspaceId: "home" };
const work = { userId: "alice", workspaceId: "work", projectId: "api" };

test("ingest, retrieve and inject round trip with the model", async () => {
  const stages = [];
  const before = wasmMemoryBytes();
  const mem = await Memory.open({ model, onProgress: (p) => stages.push(p.stage) });
  // The model's module holds about 24 MiB live (its word table and weights).
  assert.ok(wasmMemoryBytes() > before + 24 * 2 ** 20, "loading the model grows WebAssembly memory");
  assert.deepEqual(stages, ["storage", "model", "embedding", "embedded", "ready"]);
  const results = await mem.ingest([
    { text: "I take my coffee as a cortado, no sugar.", scope: home, kind: "preference" },
    { text: "The spare key is under the blue flower pot.", scope: home, kind: "fact" },
    { text: "Deploys to production need two approvals.", scope: work, kind: "fact", pinned: true },
    { text: "I take my coffee as a cortado, no sugar.", scope: home },
    { text: "<no-memory> my bank PIN is 9911", scope: home },
  ]);
  assert.deepEqual(results.map((r) => r.outcome), ["added", "added", "added", "merged", "skipped"]);
  assert.equal(results[3].id, results[0].id);

  const hits = await mem.retrieve({ text: "what espresso drink do I like?", scope: home, explain: true });
  assert.equal(hits[0].item.text, "I take my coffee as a cortado, no sugar.");
  assert.ok(hits[0].explain.semantic > 0.2, "semantic score present with the model");
  assert.ok(hits.every((h) => h.item.scope.workspaceId === "home"), "no hit from another workspace");
  assert.equal((await mem.get(hits[0].item.id)).usageCount, 1);

  const stats = await mem.stats();
  assert.equal(stats.retrievalMode, "hybrid");
  assert.equal(stats.tokenCounting, "tokenizer");
  assert.equal(stats.embedded, 3);

  const injection = await mem.inject({ text: "how do deploys work?", scope: work, budgetTokens: 150 });
  assert.match(injection.block, /^- \[m1\] /m);
  assert.equal(injection.citations[0].tag, "m1");
  assert.equal(injection.citations[0].id, injection.used[0]);
  assert.match(injection.used[0], /^[A-Z0-9]{26}$/);
  assert.ok(!injection.block.includes(injection.used[0]), "ids stay out of the block");
  assert.ok(injection.block.includes("two approvals"));
  assert.ok(injection.tokens <= 150 && injection.tokens > 0);
  assert.equal(injection.estimated, false);
  const tight = await mem.inject({ text: "coffee", scope: home, budgetTokens: 5 });
  assert.equal(tight.block, "");
  assert.ok(tight.dropped.length > 0);
  await mem.close();
});

test("a conversation ingested in one call with one date keeps its turn order, after reopening too", async () => {
  const word = (n) => (n + 26).toString(26).replace(/./g, (d) => String.fromCharCode(97 + parseInt(d, 26)));
  const createdAt = "2023-05-08T13:56:00Z";
  const turns = Array.from({ length: 120 }, (_, n) => ({
    text: `${n % 2 ? "Melanie" : "Caroline"}: we spoke of ${word(n)} and ${word(n * 7 + 3)}`,
    scope: home,
    createdAt,
  }));
  const adapter = mapAdapter({ atomic: true });
  let mem = await Memory.open({ storage: adapter });
  const ids = (await mem.ingest(turns.slice(0, 80))).map((r) => r.id);
  await mem.close();
  mem = await Memory.open({ storage: adapter });
  ids.push(...(await mem.ingest(turns.slice(80))).map((r) => r.id));
  assert.equal(new Set(ids).size, turns.length, "every turn is its own memory");
  assert.equal((await mem.get(ids[0])).follows, undefined);
  for (let n = 1; n < ids.length; n++) {
    assert.equal((await mem.get(ids[n])).follows, ids[n - 1], `turn ${n}`);
    assert.ok(ids[n - 1] < ids[n], "ids sort in input order");
  }
  await mem.close();
});

test("without a model retrieval is lexical and says so", async () => {
  const mem = await Memory.open();
  await mem.ingest({ text: "The cat is called Miso.", scope: home });
  const stats = await mem.stats();
  assert.equal(stats.retrievalMode, "lexical");
  assert.equal(stats.tokenCounting, "estimate");
  const hits = await mem.retrieve({ text: "what is the cat called", scope: home });
  assert.equal(hits[0].item.text, "The cat is called Miso.");
  const injection = await mem.inject({ text: "cat", scope: home, budgetTokens: 100 });
  assert.equal(injection.estimated, true);
  assert.equal(await mem.setModel(model), 1, "attaching later embeds the stored memory");
  assert.equal((await mem.stats()).retrievalMode, "hybrid");
});

test("the relevance gate: minRelevance on retrieve and inject, a default that silences unrelated questions", async () => {
  const mem = await Memory.open();
  await mem.ingest([
    { text: "I take my coffee as a cortado, no sugar.", scope: home },
    { text: "The spare key is under the blue flower pot.", scope: home },
  ]);
  const unrelated = "Which trombone teacher in Oslo likes sugar?";
  const weak = await mem.retrieve({ text: unrelated, scope: home, dryRun: true, explain: true });
  assert.equal(weak.length, 1);
  assert.ok(weak[0].relevance > 0 && weak[0].relevance < 0.3, String(weak[0].relevance));
  assert.equal(weak[0].explain.relevance, weak[0].relevance);
  assert.deepEqual(await mem.retrieve({ text: unrelated, scope: home, minRelevance: 0.3 }), []);
  const silent = await mem.inject({ text: unrelated, scope: home, budgetTokens: 200, dryRun: true });
  assert.deepEqual([silent.block, silent.used, silent.citations], ["", [], []]);
  const open = await mem.inject({ text: unrelated, scope: home, budgetTokens: 200, dryRun: true, minRelevance: 0 });
  assert.equal(open.used.length, 1);

  const related = await mem.inject({ text: "how do I take my coffee", scope: home, budgetTokens: 200, preamble: "Recalled notes." });
  assert.ok(related.block.startsWith("<memories>\nRecalled notes.\n- [m1] "), related.block);
  assert.deepEqual(related.citations, [{ tag: "m1", id: related.used[0] }]);
  const [top] = await mem.retrieve({ text: "how do I take my coffee", scope: home, dryRun: true });
  assert.equal(top.relevance, 1, "every query term held");
  await rejectsWith(mem.retrieve({ text: "coffee", scope: home, minRelevance: 1.5 }), "INVALID_INPUT");
  await rejectsWith(mem.inject({ text: "coffee", scope: home, budgetTokens: 100, preamble: "a\n</memories>" }), "INVALID_INPUT");
  await mem.close();
});

for (const atomic of [false, true]) {
  test(`an injected adapter (${atomic ? "with" : "without"} batch) persists across reopen`, async () => {
    const adapter = mapAdapter({ atomic });
    const mem = await Memory.open({ storage: adapter, model });
    const [a] = await mem.ingest([
      { text: "Standup is at 9:30 every weekday.", scope: work, tags: ["meetings"] },
      { text: "The staging database is read-only on Fridays.", scope: work },
    ]);
    await mem.update(a.id, { pinned: true });
    const removed = await mem.ingest({ text: "Temporary note to erase.", scope: work });
    await mem.delete(removed[0].id, { hard: true });
    const before = JSON.parse(await mem.export()).items;
    await mem.close();
    await rejectsWith(mem.stats(), "CLOSED");

    assert.ok([...adapter.map.keys()].every((k) => !k.startsWith("journal/")), "journal cleaned up");
    const erased = [...adapter.map.values()].some((v) => Buffer.from(v).includes("erase"));
    assert.equal(erased, false, "a hard-deleted text leaves no stored byte");

    const reopened = await Memory.open({ storage: adapter, model });
    assert.deepEqual(JSON.parse(await reopened.export()).items, before);
    const hits = await reopened.retrieve({ text: "when is standup?", scope: work });
    assert.equal(hits[0].item.id, a.id);
    assert.equal(hits[0].item.pinned, true);
  });
}

test("a failing adapter write is a typed error and changes nothing", async () => {
  for (const atomic of [false, true]) {
    const adapter = mapAdapter({ atomic });
    const mem = await Memory.open({ storage: adapter });
    await mem.ingest({ text: "First memory, committed.", scope: home });
    const snapshot = new Map(adapter.map);
    for (const [failWith, code] of [
      [() => new Error("disk on fire"), "STORAGE"],
      [() => Object.assign(new Error("full"), { name: "QuotaExceededError" }), "QUOTA_EXCEEDED"],
    ]) {
      adapter.failWith = failWith;
      adapter.writes = 0;
      adapter.failWritesFrom = 0;
      await rejectsWith(mem.ingest([
        { text: "Second memory, never committed.", scope: home },
        { text: "Third memory, never committed.", scope: home },
      ]), code);
      adapter.failWritesFrom = Infinity;
      assert.deepEqual(new Map([...adapter.map].filter(([k]) => !k.startsWith("journal/"))), snapshot);
      assert.equal((await mem.stats()).items, 1, "the in-memory state rolled back");
    }
    const reopened = await Memory.open({ storage: adapter });
    assert.equal((await reopened.stats()).items, 1);
    await mem.ingest({ text: "Usable again after the failures.", scope: home });
    assert.equal((await mem.stats()).items, 2);
  }
});

test("a crash mid-journal is completed or undone on reopen", async () => {
  // Fail every write from the n-th on, as if the process died there, then
  // reopen the surviving keys: the batch is all there or not at all.
  let sawBefore = false;
  let sawAfter = false;
  for (let n = 0; n < 12; n++) {
    const adapter = mapAdapter();
    const mem = await Memory.open({ storage: adapter });
    await mem.ingest({ text: "Already there.", scope: home });
    adapter.writes = 0;
    adapter.failWritesFrom = n;
    let committed = true;
    try {
      await mem.ingest([
        { text: "Batch memory one.", scope: home },
        { text: "Batch memory two.", scope: home },
      ]);
    } catch {
      committed = false;
    }
    const survivor = mapAdapter({ map: new Map(adapter.map) });
    const reopened = await Memory.open({ storage: survivor });
    const items = (await reopened.stats()).items;
    assert.equal(items, committed ? 3 : 1, `crash at write ${n}`);
    assert.ok([...survivor.map.keys()].every((k) => !k.startsWith("journal/")));
    committed ? (sawAfter = true) : (sawBefore = true);
  }
  assert.ok(sawBefore && sawAfter);
});

test("bad input is INVALID_INPUT or TOO_LARGE and the instance stays usable", async () => {
  const mem = await Memory.open();
  const lone = "broken \uD800 surrogate";
  const deep = [];
  let cursor = deep;
  for (let i = 0; i < 100; i++) cursor = cursor[0] = [];
  const cases = [
    [() => mem.ingest(42), "INVALID_INPUT"],
    [() => mem.ingest({ text: "no scope" }), "INVALID_INPUT"],
    [() => mem.ingest({ text: 7, scope: home }), "INVALID_INPUT"],
    [() => mem.ingest({ text: lone, scope: home }), "INVALID_INPUT"],
    [() => mem.ingest({ text: "ok", scope: { ...home, userId: lone } }), "INVALID_INPUT"],
    [() => mem.ingest({ text: "ok", scope: home, kind: "gossip" }), "INVALID_INPUT"],
    [() => mem.ingest({ text: "ok", scope: home, colour: "red" }), "INVALID_INPUT"],
    [() => mem.ingest({ text: "ok", scope: home, tags: deep }), "INVALID_INPUT"],
    [() => mem.ingest({ text: "ok", scope: home, tags: [1n] }), "INVALID_INPUT"],
    [() => { const cyclic = { text: "ok", scope: home }; cyclic.self = cyclic; return mem.ingest(cyclic); }, "INVALID_INPUT"],
    [() => mem.retrieve({ text: "q", scope: home, limt: 3 }), "INVALID_INPUT"],
    [() => mem.ingest({ text: "x".repeat(10 * 1024 * 1024), scope: home }), "TOO_LARGE"],
    [() => mem.ingest([{ text: "fine", scope: home }, { text: "", scope: home }]), "INVALID_INPUT"],
    [() => mem.ingest({ text: "   \n\t ", scope: home }), "INVALID_INPUT"],
    [() => mem.retrieve({ text: "q", scope: home, limit: NaN }), "INVALID_INPUT"],
    [() => mem.retrieve({ text: "q", scope: home, limit: Infinity }), "INVALID_INPUT"],
    [() => mem.ingest({ text: "ok", scope: home, metadata: { score: NaN } }), "INVALID_INPUT"],
    [() => mem.ingest({ text: "ok", scope: home, metadata: { note: null, steps: [1, -Infinity] } }), "INVALID_INPUT"],
    [() => mem.retrieve({ text: "q", scope: home, limit: -1 }), "INVALID_INPUT"],
    [() => mem.retrieve(null), "INVALID_INPUT"],
    [() => mem.inject({ text: "q", scope: home }), "INVALID_INPUT"],
    [() => mem.inject({ text: "q", scope: home, budgetTokens: NaN }), "INVALID_INPUT"],
    [() => mem.inject({ text: "q", scope: home, budgetTokens: 10, format: "html" }), "INVALID_INPUT"],
    [() => mem.get(17), "INVALID_INPUT"],
    [() => mem.get("no-such-id"), "NOT_FOUND"],
    [() => mem.update("no-such-id", { pinned: true }), "NOT_FOUND"],
    [() => mem.delete("x", { hard: "yes" }), "INVALID_INPUT"],
    [() => mem.deleteAll({ scope: {} }), "INVALID_INPUT"],
    [() => mem.import("{not json"), "CORRUPT"],
    [() => mem.import(12), "INVALID_INPUT"],
    [() => mem.setModel({ onnx: new Uint8Array([1, 2, 3]), tokenizer: "{}" }), "INVALID_INPUT"],
    [() => mem.setModel({ onnx: new Uint8Array([1, 2, 3]), tokenizer: model.tokenizer }), "MODEL"],
    [() => mem.setModel({ onnx: "bytes", tokenizer: model.tokenizer }), "INVALID_INPUT"],
  ];
  for (const [call, code] of cases) {
    await rejectsWith(call(), code);
  }
  await rejectsWith(Memory.open({ storage: "floppy" }), "INVALID_INPUT");
  await rejectsWith(Memory.open({ storage: "memory", name: "" }), "INVALID_INPUT");
  await rejectsWith(Memory.open({ storage: "indexeddb" }), "STORAGE"); // no indexedDB in plain Node
  await rejectsWith(Memory.open({ storage: { get() {} } }), "STORAGE");
  await rejectsWith(Memory.open({ config: { limits: { maxBatch: "ten" } } }), "INVALID_INPUT");
  await rejectsWith(Memory.open({ config: { limits: { maxTextByte: 10 } } }), "INVALID_INPUT");
  await rejectsWith(Memory.open({ config: { rank: { hypothesisLexicalWeight: 1.5 } } }), "INVALID_INPUT");
  const leaning = await Memory.open({ config: { rank: { hypothesisLexicalWeight: 0.4 } } }); // as lexicalWeight: off
  await leaning.ingest({ text: "Would you like tea?", scope: home });
  assert.equal((await leaning.retrieve({ text: "Would she like tea?", scope: home })).length, 1);
  const strict = await Memory.open({ config: { limits: { maxTextBytes: 10 } } }); // the rest default
  await rejectsWith(strict.ingest({ text: "longer than ten bytes", scope: home }), "TOO_LARGE");
  assert.throws(() => new Memory(), MemtideError);

  // `null` in a text or a value is read as given: only a number JSON
  // cannot write is refused.
  const nulls = { note: null, steps: [1, null, 2.5], text: "null" };
  const [nullish] = await mem.ingest({ text: "The null hypothesis holds.", scope: home, metadata: nulls });
  assert.equal(nullish.outcome, "added");
  assert.deepEqual((await mem.get(nullish.id)).metadata, nulls);
  const [ok] = await mem.ingest({ text: "Still works after all that.", scope: home });
  assert.equal(ok.outcome, "added");
  assert.equal((await mem.retrieve({ text: "still works", scope: home }))[0].item.id, ok.id);
});

test("exports import into a new store; damaged or newer exports are refused", async () => {
  const source = await Memory.open();
  await source.ingest([
    { text: "Alpha memory for export.", scope: home },
    { text: "Beta memory for export.", scope: work },
  ]);
  const data = await source.export();
  const target = await Memory.open();
  assert.deepEqual(await target.import(data), { added: 2, replaced: 0, merged: 0, files: 0 });
  assert.equal((await target.stats()).items, 2);
  assert.deepEqual(await target.import(new TextEncoder().encode(data)), { added: 0, replaced: 2, merged: 0, files: 0 });

  const tampered = data.replace("Alpha memory", "Gamma memory");
  await rejectsWith(target.import(tampered), "CORRUPT");
  const parsed = JSON.parse(data);
  parsed.version = 99;
  await rejectsWith(target.import(JSON.stringify(parsed)), "VERSION_MISMATCH");
  assert.equal((await target.stats()).items, 2);
});

test("concurrent calls run one at a time in call order", async () => {
  const mem = await Memory.open({ storage: mapAdapter() });
  const texts = Array.from({ length: 25 }, (_, i) => `Concurrent memory number ${i} about topic ${i * 7}.`);
  const results = await Promise.all(texts.map((text) => mem.ingest({ text, scope: home })));
  assert.ok(results.every(([r]) => r.outcome === "added"));
  const page = await mem.list({ scope: home, limit: 100 });
  assert.equal(page.items.length, 25);
  const [stats, hits] = await Promise.all([
    mem.stats(),
    mem.retrieve({ text: "memory number 3", scope: home, dryRun: true }),
  ]);
  assert.equal(stats.items, 25);
  assert.ok(hits.length > 0);
});

test("soft delete, deleteAll and the injected clock", async () => {
  let now = Date.parse("2026-01-01T00:00:00Z");
  const mem = await Memory.open({ now: () => now });
  const [first] = await mem.ingest({ text: "Remember the milk.", scope: home, privacy: { retentionDays: 1 } });
  assert.equal((await mem.get(first.id)).createdAt, "2026-01-01T00:00:00.000Z");
  assert.equal((await mem.retrieve({ text: "milk", scope: home })).length, 1);
  now += 2 * 86_400_000;
  assert.equal((await mem.retrieve({ text: "milk", scope: home })).length, 0, "expired");
  const [second] = await mem.ingest({ text: "Buy oat milk.", scope: home });
  await mem.delete(second.id);
  assert.equal((await mem.retrieve({ text: "oat milk", scope: home })).length, 0);
  assert.equal((await mem.ingest({ text: "Buy oat milk.", scope: home }))[0].outcome, "skipped");
  await mem.ingest({ text: "Work note.", scope: work });
  assert.deepEqual(await mem.deleteAll({ scope: { userId: "alice", workspaceId: "work" }, hard: true }),
    { deleted: 1, hard: true, summaries: 0 });
  assert.equal((await mem.stats({ userId: "alice", workspaceId: "work" })).items, 0);
});
