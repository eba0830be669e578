// memtide/langgraph, installed from the packed tarball (scripts/pack-apps.sh)
// beside @langchain/langgraph from npm (tests/apps/package.json): the
// MemoryStore inside a compiled LangGraph graph that writes memories in one
// run and reads them in a later one, after a reopen; every operation of
// BaseStore checked against LangGraph's own InMemoryStore as the oracle
// (LangGraph publishes no validation suite for stores: its
// @langchain/langgraph-checkpoint-validation checks checkpoint savers
// only); and the examples of docs/integrations/langgraph.md run as written.
// The graph's scenario (langgraph/scenario.mjs) runs in Chromium too, in
// tests/apps/integrations.test.mjs.
// Run: bash scripts/pack-apps.sh && node --test tests/apps/langgraph.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile, rm, writeFile } from "node:fs/promises";

import { Memory } from "memtide";
import { MemoryStore } from "memtide/langgraph";
import { BaseStore, InMemoryStore } from "@langchain/langgraph";
import { runGraph } from "./langgraph/scenario.mjs";
import { judgeGraph } from "./langgraph/judge.mjs";

/** A storage adapter over a Map, so a test can reopen a store and read its bytes. */
function mapStorage() {
  const map = new Map();
  return {
    map,
    get: (k) => map.get(k) ?? null,
    put: (k, v) => void map.set(k, v.slice()),
    delete: (k) => void map.delete(k),
    list: (p) => [...map.keys()].filter((k) => k.startsWith(p)),
  };
}

const contains = (map, text) => {
  const needle = Buffer.from(text);
  return [...map.values()].some((v) => Buffer.from(v).includes(needle));
};

test("MemoryStore is a BaseStore that refuses what is not a memtide Memory", async () => {
  const memory = await Memory.open({ storage: "memory" });
  const store = new MemoryStore({ memory });
  assert.ok(store instanceof BaseStore);
  assert.throws(() => new MemoryStore({ memory: {} }), TypeError);
  assert.throws(() => new MemoryStore({ memory, scope: { userId: "u" } }), TypeError);
  assert.deepEqual(store.scopeOf(["memories", "alice"]), { userId: "langgraph", workspaceId: "store", projectId: "memories:alice" });
  await assert.rejects(store.put(["a.b"], "k", { x: 1 }), /periods/);
  await assert.rejects(store.put([], "k", { x: 1 }), /empty/);
  await memory.close();
});

test("a graph writes memories in one run and reads them in a later run, after a reopen", async () => {
  const storage = mapStorage();
  judgeGraph(await runGraph(() => Memory.open({ storage })));
});

/** The operations both stores run, one step at a time. */
const steps = [
  ["put", ["docs", "alice"], "a", { text: "the red kite", n: 1, tags: ["x"], nested: { deep: true } }],
  ["put", ["docs", "alice"], "b", { text: "the blue kite", n: 2 }],
  ["put", ["docs", "bob"], "a", { text: "a green boat", n: 3 }],
  ["put", ["docs", "alice", "drafts"], "c", { text: "a draft about kites", n: 4, status: "draft" }],
  ["put", ["users", "bob", "prefs"], "theme", { theme: "dark", n: 5 }],
  ["get", ["docs", "alice"], "a"],
  ["get", ["docs", "alice"], "zzz"],
  ["get", ["docs"], "a"],
  ["search", ["docs"], {}],
  ["search", ["docs", "alice"], { filter: { n: 2 } }],
  ["search", [], { filter: { n: { $gte: 3 } } }],
  ["search", [], { filter: { n: { $in: [1, 5] } } }],
  ["search", [], { filter: { status: { $ne: "draft" } } }],
  ["search", ["docs"], { limit: 2, offset: 1 }],
  ["listNamespaces", {}],
  ["listNamespaces", { prefix: ["docs"] }],
  ["listNamespaces", { suffix: ["prefs"] }],
  ["listNamespaces", { prefix: ["docs", "*"] }],
  ["listNamespaces", { maxDepth: 1 }],
  ["listNamespaces", { limit: 2, offset: 1 }],
  ["put", ["docs", "alice"], "a", { text: "the red kite, repainted", n: 10 }],
  ["get", ["docs", "alice"], "a"],
  ["delete", ["docs", "alice"], "b"],
  ["get", ["docs", "alice"], "b"],
  ["search", ["docs", "alice"], {}],
  ["delete", ["users", "bob", "prefs"], "theme"],
  ["get", ["users", "bob", "prefs"], "theme"],
];

/** What a step returns, comparable between stores: no dates, searches as sets. */
async function run(store, [verb, ...args]) {
  const plain = (item) => item && { key: item.key, namespace: item.namespace, value: item.value };
  switch (verb) {
    case "put": return store.put(...args);
    case "delete": return store.delete(...args);
    case "get": return plain(await store.get(...args));
    case "search": {
      const items = await store.search(...args);
      return { count: items.length, items: items.map(plain) };
    }
    case "listNamespaces": return store.listNamespaces(...args);
    default: throw new Error(verb);
  }
}

test("every BaseStore operation answers as LangGraph's InMemoryStore does", async () => {
  const storage = mapStorage();
  const memory = await Memory.open({ storage });
  const ours = new MemoryStore({ memory, scope: { userId: "app", workspaceId: "main" } });
  const oracle = new InMemoryStore();
  for (const step of steps) {
    const [want, got] = [await run(oracle, step), await run(ours, step)];
    if (step[0] === "search" && !(step[2].limit || step[2].offset)) {
      // Both return every match; memtide lists newest first, InMemoryStore in insertion order.
      const key = (i) => JSON.stringify([i.namespace, i.key]);
      assert.equal(got.count, want.count, JSON.stringify(step));
      // JSON objects are unordered: memtide keeps a value's keys sorted.
      const canonical = (i) => JSON.stringify(i, (_, v) =>
        v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v);
      assert.deepEqual(new Set(got.items.map(canonical)), new Set(want.items.map(canonical)), JSON.stringify(step));
      assert.equal(new Set(got.items.map(key)).size, got.count);
    } else if (step[0] === "search") {
      assert.equal(got.count, want.count, JSON.stringify(step));
    } else {
      assert.deepEqual(got, want, JSON.stringify(step));
    }
  }
  // A namespace whose last item was deleted is listed no more (InMemoryStore
  // keeps listing it).
  assert.deepEqual(await ours.listNamespaces(), [["docs", "alice"], ["docs", "alice", "drafts"], ["docs", "bob"]]);
  // Times: createdAt stays, updatedAt moves on a put of the same key.
  const item = await ours.get(["docs", "alice"], "a");
  assert.ok(item.createdAt instanceof Date && item.updatedAt >= item.createdAt);
  // A delete erases: no byte of the deleted values stays in storage.
  assert.ok(!contains(storage.map, "the blue kite"));
  assert.ok(!contains(storage.map, "dark"));
  assert.ok(contains(storage.map, "repainted"));
  await memory.close();
});

test("batch runs mixed operations in order, with consecutive puts in one commit", async () => {
  const storage = mapStorage();
  let commits = 0;
  const counting = { ...storage, put: (k, v) => { if (k === "meta/manifest") commits += 1; storage.put(k, v); } };
  const memory = await Memory.open({ storage: counting });
  const store = new MemoryStore({ memory });
  const before = commits;
  const results = await store.batch([
    { namespace: ["n"], key: "1", value: { text: "one apple" } },
    { namespace: ["n"], key: "2", value: { text: "two pears" } },
    { namespace: ["n"], key: "1", value: { text: "one plum" } },
    { namespace: ["n"], key: "1" },
    { namespacePrefix: ["n"], query: "pears", limit: 5, offset: 0 },
    { namespace: ["n"], key: "2", value: null },
    { namespace: ["n"], key: "2" },
    { matchConditions: undefined, limit: 10, offset: 0 },
  ]);
  assert.equal(commits - before, 2, "the three puts commit once, the delete once");
  assert.equal(results[0], undefined);
  assert.deepEqual(results[3].value, { text: "one plum" }, "the last put of a key wins and a later get sees it");
  assert.deepEqual(results[4].map((i) => i.key), ["2"]);
  assert.ok(results[4][0].score > 0);
  assert.equal(results[6], null);
  assert.deepEqual(results[7], [["n"]]);
  // Values are stored as JSON: what comes back is what went in, types included.
  const value = { s: "x", n: 1.5, b: false, z: null, a: [1, "two", { three: 3 }], o: { deep: { deeper: ["y"] } } };
  await store.put(["n"], "json", value);
  assert.deepEqual((await store.get(["n"], "json")).value, value);
  // Past memtide's metadata limit a value is refused with its typed error.
  await assert.rejects(store.put(["n"], "big", { blob: "x".repeat(20_000) }), (e) => e.code === "TOO_LARGE");
  await memory.close();
});

test("the examples of docs/integrations/langgraph.md run", async () => {
  const guide = await readFile(new URL("../../docs/integrations/langgraph.md", import.meta.url), "utf8");
  const blocks = [...guide.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(blocks.length > 0);
  console.assert = (condition, ...message) => {
    if (!condition) throw new Error(`console.assert failed: ${message.join(" ")}`);
  };
  for (const [i, code] of blocks.entries()) {
    // Beside this file, so "memtide" and "@langchain/langgraph" resolve to tests/apps/node_modules.
    const file = new URL(`./langgraph-example-${i + 1}.mjs`, import.meta.url);
    await writeFile(file, code);
    try {
      await import(file.href);
    } finally {
      await rm(file);
    }
  }
});
