// Node tests of memtide's WebAssembly component (wit/), transpiled by jco,
// with the storage import implemented in JavaScript over a Map: every verb,
// a reopen over the same storage, bad input, storage failures, and the
// semantic model. Run by scripts/test-wit.sh (which builds and transpiles
// the component first).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";

import {
  MapStorage,
  errorOf,
  instantiateMemtide,
  listQuery,
  retrieveQuery,
  scope,
} from "./host.mjs";

const home = scope("alice", "home");
const work = scope("alice", "work", { projectId: "apollo" });

const inputs = [
  { text: "I take my coffee as a cortado, no sugar.", scope: home, kind: "preference", tags: ["coffee"] },
  { text: "The spare key is under the blue flower pot.", scope: home, kind: "fact", pinned: true },
  {
    text: "The Apollo launch review moved to Thursday at 10am.",
    scope: work,
    kind: "episodic",
    source: { kind: "message", ref: "msg-42", uri: "chat://apollo/42" },
    createdAt: "2024-05-08T13:56:00+02:00",
  },
  { text: "My phone number is 555-0100.", scope: home, privacy: { pii: true, private: false } },
];

/** Opens a store over `storage` in a new instance of the component. */
async function open(storage, config) {
  const { Store } = await instantiateMemtide(storage);
  return Store.open(config);
}

test("every verb round-trips through the component", async () => {
  const storage = new MapStorage();
  const store = await open(storage);

  const results = store.ingest(inputs);
  assert.deepEqual(results.map((r) => r.outcome), ["added", "added", "added", "added"]);
  const [coffee, key, launch, phone] = results.map((r) => r.id);
  assert.match(coffee, /^[0-9A-Z]{26}$/, "ULID ids from WASI's clock and random numbers");
  assert.equal(new Set(results.map((r) => r.id)).size, 4);
  const again = store.ingest([{ text: inputs[0].text, scope: home }]);
  assert.equal(again[0].outcome, "merged");
  assert.equal(again[0].reason, "duplicate");
  assert.equal(again[0].id, coffee);
  const skipped = store.ingest([{ text: "remember nothing <no-memory>", scope: home }]);
  assert.deepEqual(skipped[0], { id: undefined, outcome: "skipped", reason: "no-memory", similarTo: undefined });

  const hits = store.retrieve(retrieveQuery("how do I like my coffee?", home, { explain: true }));
  assert.equal(hits[0].item.id, coffee);
  assert.equal(hits[0].item.kind, "preference");
  assert.deepEqual(hits[0].item.tags, ["coffee"]);
  assert.ok(hits[0].score > 0);
  assert.ok(hits[0].explain.lexical > 0);
  assert.equal(hits[0].explain.semantic, undefined, "lexical-only without a model");
  assert.deepEqual(hits[0].policy, {
    scopeFields: ["userId", "workspaceId"], status: "approved", pii: false, expiresAt: undefined, filters: [],
  });
  assert.ok(!hits.some((h) => h.item.id === phone), "PII only when asked for");
  assert.ok(!hits.some((h) => h.item.id === launch), "other workspaces never leak");
  const withPii = store.retrieve(retrieveQuery("phone number", home, { includePii: true, dryRun: true }));
  assert.equal(withPii[0].item.id, phone);
  assert.equal(store.get(coffee).usageCount, 1n, "retrieval marks what it returned as used");
  assert.ok(store.get(coffee).lastUsedAt);
  assert.equal(store.get(phone).usageCount, 0n, "a dry run does not");

  const injection = store.inject({ query: retrieveQuery("coffee order", home), budgetTokens: 200 });
  assert.equal(injection.used[0], key, "pinned first");
  assert.ok(injection.used.includes(coffee));
  const { tag } = injection.citations.find((c) => c.id === coffee);
  assert.ok(injection.block.includes(`[${tag}] `), injection.block);
  assert.ok(!injection.block.includes(coffee), "ids stay out of the block");
  // The relevance gate: one weak word in common ("sugar") is not enough
  // under inject's default; at 0 the weak match comes back.
  const unrelated = "Which trombone teacher in Oslo likes sugar?";
  const gated = store.inject({ query: retrieveQuery(unrelated, home, { dryRun: true }), budgetTokens: 200, preamble: "" });
  assert.deepEqual(gated.used, [key], "only the pinned memory");
  assert.ok(gated.block.startsWith("<memories>\n- [m1] "), gated.block);
  const ungated = store.inject({ query: retrieveQuery(unrelated, home, { dryRun: true, minRelevance: 0 }), budgetTokens: 200 });
  assert.deepEqual(ungated.used, [key, coffee]);
  const weak = store.retrieve(retrieveQuery(unrelated, home, { dryRun: true }));
  assert.deepEqual(weak.map((h) => h.item.id), [coffee]);
  assert.ok(weak[0].relevance > 0 && weak[0].relevance < 0.3, String(weak[0].relevance));
  assert.deepEqual(store.retrieve(retrieveQuery(unrelated, home, { dryRun: true, minRelevance: 0.3 })), []);
  assert.equal(injection.estimated, true);
  assert.ok(injection.tokens > 0 && injection.tokens <= 200);
  const xml = store.inject({ query: retrieveQuery("coffee", home), budgetTokens: 200, format: "xml" });
  assert.match(xml.block, /<memory /);
  const tight = store.inject({ query: retrieveQuery("coffee", home), budgetTokens: 1 });
  assert.equal(tight.block, "");
  assert.ok(tight.dropped.length > 0 && tight.dropped.every((d) => d.tokens > 1));

  const item = store.get(launch);
  assert.equal(item.text, inputs[2].text);
  assert.deepEqual(item.scope, { userId: "alice", workspaceId: "work", projectId: "apollo", cardId: undefined, sessionId: undefined });
  assert.deepEqual(item.source, { kind: "message", ref: "msg-42", uri: "chat://apollo/42" });
  assert.equal(item.createdAt, "2024-05-08T11:56:00.000Z");
  assert.match(item.contentHash, /^[0-9a-f]{64}$/);

  const page = store.list(listQuery({ scope: { userId: "alice", workspaceId: "home" }, limit: 2 }));
  assert.equal(page.items.length, 2);
  assert.ok(page.nextCursor);
  const rest = store.list(listQuery({ scope: { userId: "alice", workspaceId: "home" }, cursor: page.nextCursor }));
  assert.equal(page.items.length + rest.items.length, 3);
  assert.deepEqual(store.list(listQuery({ kinds: ["fact"] })).items.map((i) => i.id), [key]);

  const updated = store.update(coffee, { text: "I take my coffee as a flat white.", tags: ["coffee", "milk"], status: "pending" });
  assert.equal(updated.text, "I take my coffee as a flat white.");
  assert.equal(updated.status, "pending");
  assert.deepEqual(store.get(coffee).tags, ["coffee", "milk"]);
  assert.equal(store.retrieve(retrieveQuery("flat white", home)).length, 0, "pending is not retrieved");
  store.update(coffee, { status: "approved" });
  assert.equal(store.retrieve(retrieveQuery("flat white", home))[0].item.id, coffee);

  store.delete(phone, false);
  assert.ok(store.get(phone).deletedAt, "soft delete keeps a suppressed item");
  assert.equal(store.ingest([{ text: inputs[3].text, scope: home }])[0].reason, "suppressed");
  store.delete(phone, true);
  assert.equal(errorOf(() => store.get(phone)).code, "not-found");

  const stats = store.stats(undefined);
  assert.equal(stats.items, 3);
  assert.equal(stats.active, 3);
  assert.equal(stats.pinned, 1);
  assert.equal(stats.tenants, 2);
  assert.equal(stats.retrievalMode, "lexical");
  assert.equal(stats.tokenCounting, "estimate");
  assert.deepEqual(stats.byKind, [
    { kind: "episodic", count: 1 },
    { kind: "preference", count: 1 },
    { kind: "fact", count: 1 },
  ]);
  assert.ok(stats.storedBytes > 0n);
  assert.equal(store.stats({ workspaceId: "work" }).items, 1);

  const exported = store.export();
  assert.equal(JSON.parse(exported).format, "mnemo-export");
  const copy = await open(new MapStorage());
  assert.deepEqual(copy.import(exported), { added: 3, replaced: 0, merged: 0, files: 0 });
  assert.deepEqual(copy.get(coffee), store.get(coffee));
  assert.deepEqual(copy.import(exported), { added: 0, replaced: 3, merged: 0, files: 0 });

  assert.deepEqual(store.deleteAll({ userId: "alice", workspaceId: "work" }, true), { deleted: 1, hard: true, summaries: 0 });
  assert.equal(errorOf(() => store.get(launch)).code, "not-found");
  assert.equal(store.refresh(), false, "nobody else wrote");
  assert.ok([...storage.map.keys()].every((k) => !k.startsWith("journal/")), "no journal left behind");
  store[Symbol.dispose]();
});

test("a store reopened over the same storage has everything", async () => {
  const storage = new MapStorage();
  const first = await open(storage);
  const ids = first.ingest(inputs).map((r) => r.id);
  first.update(ids[0], { pinned: true });
  first.delete(ids[3], false);
  first.retrieve(retrieveQuery("coffee", home));
  const before = {
    items: ids.map((id) => first.get(id)),
    page: first.list(listQuery({ includeDeleted: true })),
    stats: first.stats(undefined),
    export: JSON.parse(first.export()),
  };
  first[Symbol.dispose]();

  const reopened = await open(storage);
  assert.deepEqual(ids.map((id) => reopened.get(id)), before.items);
  assert.deepEqual(reopened.list(listQuery({ includeDeleted: true })), before.page);
  assert.deepEqual(reopened.stats(undefined), before.stats);
  const after = JSON.parse(reopened.export());
  assert.deepEqual(after.items, before.export.items);
  assert.equal(reopened.retrieve(retrieveQuery("coffee", home, { dryRun: true }))[0].item.id, ids[0]);
  const pinned = reopened.inject({ query: retrieveQuery("anything", home), budgetTokens: 500 });
  assert.deepEqual(pinned.used.slice(0, 2).sort(), [ids[0], ids[1]].sort());
  assert.equal(reopened.ingest([{ text: inputs[3].text, scope: home }])[0].reason, "suppressed");

  // The same instance can open a second store over the same storage, too.
  reopened.ingest([{ text: "Another memory after the reopen.", scope: home }]);
  const { Store } = await instantiateMemtide(storage);
  assert.equal(Store.open(undefined).stats(undefined).items, 5);
});

test("bad input is an invalid-input error and the store stays usable", async () => {
  const storage = new MapStorage();
  const store = await open(storage);
  store.ingest([inputs[0]]);
  const before = storage.snapshot();

  const badTime = errorOf(() => store.ingest([{ ...inputs[1] }, { ...inputs[2], createdAt: "yesterday" }]));
  assert.equal(badTime.code, "invalid-input");
  assert.match(badTime.message, /inputs\[1\]: createdAt: `yesterday` is not an RFC 3339 date-time/);
  assert.equal(errorOf(() => store.ingest([{ text: "x", scope: scope("", "home") }])).code, "invalid-input");
  assert.equal(errorOf(() => store.retrieve(retrieveQuery("x", home, { since: "2024-13-01T00:00:00Z" }))).code, "invalid-input");
  assert.equal(errorOf(() => store.get("../etc/passwd")).code, "invalid-input");
  assert.equal(errorOf(() => store.update("nope", { pinned: true })).code, "not-found");
  assert.equal(errorOf(() => store.ingest([{ text: "x".repeat(70_000), scope: home }])).code, "too-large");
  assert.equal(errorOf(() => store.import("{not json")).code, "corrupt");
  assert.equal(errorOf(() => store.deleteAll({}, true)).code, "invalid-input");
  assert.deepEqual(storage.snapshot(), before, "failed calls wrote nothing");
  assert.equal(store.stats(undefined).items, 1);

  const ok = store.ingest([inputs[1]]);
  assert.equal(ok[0].outcome, "added");
  assert.equal(store.stats(undefined).items, 2);

  const { Store } = await instantiateMemtide(new MapStorage());
  const badConfig = errorOf(() => Store.open('{"limits":{"maxTextBytes":"ten"}}'));
  assert.equal(badConfig.code, "invalid-input");
  assert.match(badConfig.message, /^invalid input: config: /);
  assert.equal(errorOf(() => Store.open('{"unknownSetting":1}')).code, "invalid-input");
  const limits = {
    maxTextBytes: 10, maxBatch: 10, maxTags: 4, maxTagBytes: 16, maxSourceBytes: 64, maxResults: 10, maxMergeRecords: 4,
  };
  const small = Store.open(JSON.stringify({ limits }));
  assert.equal(errorOf(() => small.ingest([{ text: "more than ten bytes", scope: home }])).code, "too-large");
});

test("a storage quota error is quota-exceeded and changes nothing", async () => {
  const storage = new MapStorage();
  const store = await open(storage);
  const [coffee] = store.ingest([inputs[0], inputs[1]]).map((r) => r.id);
  const before = storage.snapshot();
  const listed = store.list(listQuery());

  storage.failPut = () => ({ tag: "quota-exceeded", val: "the host store is full" });
  const full = errorOf(() => store.ingest([inputs[2], inputs[3]]));
  assert.equal(full.code, "quota-exceeded");
  assert.match(full.message, /the host store is full/);
  assert.equal(errorOf(() => store.update(coffee, { pinned: true })).code, "quota-exceeded");
  assert.deepEqual(storage.snapshot(), before, "storage unchanged");
  assert.deepEqual(store.list(listQuery()), listed, "memory unchanged");
  assert.equal(store.get(coffee).pinned, false);

  // Other failures are the storage code; the write after the failure works.
  // The manifest's put is the commit point of a small write (docs/format.md, 2.2).
  storage.failPut = (key) => (key === "meta/manifest" ? { tag: "other", val: "disk on fire" } : null);
  assert.equal(errorOf(() => store.ingest([inputs[2], inputs[3]])).code, "storage");
  assert.deepEqual(storage.snapshot(), before);
  storage.failPut = null;
  assert.equal(store.ingest([inputs[2]])[0].outcome, "added");

  const reopened = await open(storage);
  assert.equal(reopened.stats(undefined).items, 3);
});

test("with the model, stats say hybrid and a semantic query ranks right", async () => {
  const dir = process.env.MEMTIDE_MODEL_DIR ??
    execFileSync("bash", ["scripts/fetch-model.sh"], { encoding: "utf8" }).trim().split("\n").pop();
  const onnx = await readFile(`${dir}/model.onnx`);
  const tokenizer = await readFile(`${dir}/tokenizer.json`, "utf8");

  const storage = new MapStorage();
  const store = await open(storage);
  const [car] = store.ingest([
    { text: "I parked the car on level three of the garage.", scope: home },
    { text: "The quarterly tax forms are due in April.", scope: home },
    { text: "Lunch with Sam on Friday at the noodle bar.", scope: home },
  ]).map((r) => r.id);
  const question = retrieveQuery("where is my automobile?", home, { explain: true, dryRun: true });
  assert.ok(!store.retrieve(question).some((h) => h.explain.lexical > 0), "no shared words with the query");

  assert.equal(errorOf(() => store.setModel(new Uint8Array([1, 2, 3]), tokenizer)).code, "model");
  assert.equal(store.stats(undefined).retrievalMode, "lexical");

  assert.equal(store.setModel(onnx, tokenizer), 3, "the stored memories are embedded");
  const stats = store.stats(undefined);
  assert.equal(stats.retrievalMode, "hybrid");
  assert.equal(stats.tokenCounting, "tokenizer");
  assert.equal(stats.embedded, 3);
  assert.match(stats.model, /^all-MiniLM-L6-v2-int8\//);

  const hits = store.retrieve(question);
  assert.equal(hits[0].item.id, car);
  assert.equal(hits[0].explain.lexical, 0);
  assert.ok(hits[0].explain.semantic > 0.3, `cosine ${hits[0].explain.semantic}`);
  assert.equal(store.inject({ query: question, budgetTokens: 100 }).estimated, false);

  // The embeddings persist: a reopened store with the model does not
  // embed again.
  store[Symbol.dispose]();
  const reopened = await open(storage);
  assert.equal(reopened.stats(undefined).embedded, 3);
  assert.equal(reopened.setModel(onnx, tokenizer), 0);
  assert.equal(reopened.retrieve(question)[0].item.id, car);
});

test("Markdown files, the memory tool and the hot file round-trip through the component", async () => {
  const storage = new MapStorage();
  const store = await open(storage);

  // sync-file, file, remove-file; chunks cite path and lines.
  const notes = "# Notes\nThe espresso machine is descaled every Sunday.\n";
  const sync = store.syncFile(home, "notes/MEMORY.md", notes);
  assert.equal(sync.path, "notes/MEMORY.md");
  assert.equal(sync.outcome, "created");
  assert.equal(sync.removed, 0);
  assert.equal(sync.chunks.length, 1);
  assert.deepEqual(store.syncFile(home, "notes/MEMORY.md", notes), { ...sync, outcome: "unchanged" });
  const file = store.file(home, "notes/MEMORY.md");
  assert.deepEqual(file.scope, { userId: "alice", workspaceId: "home", projectId: undefined, cardId: undefined, sessionId: undefined });
  assert.equal(file.content, notes);
  assert.match(file.contentHash, /^[0-9a-f]{64}$/);
  assert.match(file.updatedAt, /^\d{4}-\d\d-\d\dT.*Z$/);
  assert.equal(store.file(home, "nope.md"), undefined);
  assert.equal(store.file(work, "notes/MEMORY.md"), undefined, "files are private to their scope");
  const chunk = store.get(sync.chunks[0]);
  assert.deepEqual(chunk.sourceLines, { start: 1, end: 2 });
  assert.deepEqual(chunk.source, { kind: "file", ref: "notes/MEMORY.md", uri: undefined });
  assert.equal(chunk.kind, "document");
  const [hit] = store.retrieve(retrieveQuery("when is the espresso machine descaled", home));
  assert.equal(hit.item.id, chunk.id);
  assert.equal(hit.citation, "notes/MEMORY.md#L1-L2");
  const exported = JSON.parse(store.export({ userId: "alice", workspaceId: "home" }));
  assert.deepEqual(exported.files.map((f) => f.path), ["notes/MEMORY.md"]);
  assert.deepEqual(exported.filter, { userId: "alice", workspaceId: "home" });
  const { block, citations } = store.inject({ query: retrieveQuery("espresso descaled", home), budgetTokens: 500 });
  const cited = citations.find((c) => c.id === chunk.id);
  assert.ok(block.includes(`[${cited.tag}] [notes/MEMORY.md#L1-L2]`), block);
  const changed = store.syncFile(home, "notes/MEMORY.md", notes.replace("Sunday", "Monday"));
  assert.equal(changed.outcome, "updated");
  assert.equal(changed.removed, 1);
  assert.equal(errorOf(() => store.get(chunk.id)).code, "not-found");
  assert.equal(store.removeFile(home, "notes/MEMORY.md"), true);
  assert.equal(store.removeFile(home, "notes/MEMORY.md"), false);
  assert.equal(store.file(home, "notes/MEMORY.md"), undefined);
  assert.equal(errorOf(() => store.syncFile(home, "../etc/passwd", "x")).code, "invalid-input");
  assert.equal(errorOf(() => store.syncFile(scope("", "home"), "a.md", "x")).code, "invalid-input");

  // memory-tool: the input crosses as the JSON text of the tool call's input.
  const tool = (input) => store.memoryTool(home, JSON.stringify(input));
  assert.deepEqual(tool({ command: "create", path: "/memories/prefs.md", file_text: "# Preferences\n- coffee: cortado\n" }),
    { content: "File created successfully at: /memories/prefs.md", isError: false });
  assert.deepEqual(tool({ command: "view", path: "/memories/prefs.md" }), {
    content: "Here's the content of /memories/prefs.md with line numbers:\n     1\t# Preferences\n     2\t- coffee: cortado\n     3\t",
    isError: false,
  });
  assert.deepEqual(tool({ command: "str_replace", path: "/memories/prefs.md", old_str: "cortado", new_str: "flat white" }), {
    content: "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" +
      "     1\t# Preferences\n     2\t- coffee: flat white\n     3\t",
    isError: false,
  });
  assert.deepEqual(tool({ command: "insert", path: "/memories/prefs.md", insert_line: 2, insert_text: "- tea: green" }),
    { content: "The file /memories/prefs.md has been edited.", isError: false });
  assert.deepEqual(tool({ command: "rename", old_path: "/memories/prefs.md", new_path: "/memories/me/prefs.md" }),
    { content: "Successfully renamed /memories/prefs.md to /memories/me/prefs.md", isError: false });
  assert.deepEqual(tool({ command: "view", path: "/memories" }), {
    content: "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n" +
      "48B\t/memories\n48B\t/memories/me/\n48B\t/memories/me/prefs.md",
    isError: false,
  });
  const [toolHit] = store.retrieve(retrieveQuery("green tea", home));
  assert.equal(toolHit.item.source.ref, "/memories/me/prefs.md");
  assert.deepEqual(toolHit.item.sourceLines, { start: 1, end: 3 });
  assert.deepEqual(tool({ command: "delete", path: "/memories/me/prefs.md" }),
    { content: "Successfully deleted /memories/me/prefs.md", isError: false });
  assert.deepEqual(tool({ command: "delete", path: "/memories/me/prefs.md" }),
    { content: "Error: The path /memories/me/prefs.md does not exist", isError: true });
  const before = storage.snapshot();
  for (const [path, shown, reason] of [
    ["/memories/../etc/passwd", "/memories/../etc/passwd", "`.` and `..` path segments are not allowed"],
    ["/memories/%2e%2e%2fetc", "/memories/%2e%2e%2fetc", "percent-encoded sequences (such as `%2e`) are not allowed in paths"],
    ["/etc/passwd", "/etc/passwd", "the path must be /memories or lie under /memories"],
    ["/memories\\..\\etc", "/memories\\\\..\\\\etc", "backslashes are not allowed in paths"],
    ["/memories/a\0b", "/memories/a\\0b", "control characters are not allowed in paths"],
  ]) {
    assert.deepEqual(tool({ command: "create", path, file_text: "x" }),
      { content: `Error: The path ${shown} is not allowed: ${reason}`, isError: true });
  }
  assert.deepEqual(storage.snapshot(), before, "refused calls wrote nothing");
  const notJson = errorOf(() => store.memoryTool(home, "{not json"));
  assert.equal(notJson.code, "invalid-input");
  assert.match(notJson.message, /input is not JSON/);

  // render-hot-file and read-hot-file.
  const [coffee, tea] = store.ingest([
    { text: "coffee black", scope: home, pinned: true, createdAt: "2026-01-01T00:00:00Z" },
    { text: "tea green", scope: home, pinned: true, createdAt: "2026-01-02T00:00:00Z" },
  ]).map((r) => r.id);
  const rendered = store.renderHotFile(home, "# Me\n");
  assert.equal(rendered, "# Me\n\n<!-- mnemo:begin pinned -->\n" +
    `- coffee black <!-- mnemo:id=${coffee} -->\n- tea green <!-- mnemo:id=${tea} -->\n<!-- mnemo:end pinned -->\n`);
  assert.equal(errorOf(() => store.renderHotFile(home, "<!-- mnemo:begin pinned -->\n")).code, "invalid-input");
  const edited = rendered.replace("coffee black", "coffee white").replace(`- tea green <!-- mnemo:id=${tea} -->\n`, "- water still\n");
  const read = store.readHotFile(home, "USER.md", edited);
  assert.deepEqual({ ...read, added: read.added.length }, { added: 1, updated: [coffee], pinned: [], unpinned: [tea] });
  assert.equal(store.get(read.added[0]).text, "water still");
  assert.deepEqual(store.readHotFile(home, "USER.md", store.renderHotFile(home, edited)), { added: [], updated: [], pinned: [], unpinned: [] });

  // Everything persists across a reopen.
  tool({ command: "create", path: "/memories/kept.md", file_text: "kept" });
  const reopened = await open(storage);
  assert.equal(reopened.file(home, "/memories/kept.md").content, "kept");
  assert.equal(reopened.renderHotFile(home, edited), store.renderHotFile(home, edited));
});

test("keys, metadata filters and history round-trip through the component", async () => {
  const storage = new MapStorage();
  const store = await open(storage);
  const [added] = store.upsert([{ text: "The locker code is 4411.", scope: home, key: "locker", metadata: JSON.stringify({ kind: "code", n: 1 }) }]);
  assert.equal(added.outcome, "added");
  const [replaced] = store.upsert([{ text: "The locker code is 9922.", scope: home, key: "locker", metadata: JSON.stringify({ kind: "code", n: 2 }) }]);
  assert.deepEqual([replaced.outcome, replaced.id], ["replaced", added.id]);
  store.ingest([{ text: "The gym opens at six.", scope: home, metadata: JSON.stringify({ kind: "hours" }) }]);
  const item = store.get(added.id);
  assert.equal(item.key, "locker");
  assert.deepEqual(JSON.parse(item.metadata), { kind: "code", n: 2 });

  const hits = store.retrieve(retrieveQuery("locker code", home, { metadata: JSON.stringify({ kind: "code" }) }));
  assert.deepEqual(hits.map((h) => h.item.id), [added.id]);
  assert.equal(store.retrieve(retrieveQuery("locker code", home, { metadata: JSON.stringify({ kind: "hours" }) })).length, 0);
  const page = store.list(listQuery({ scope: { userId: "alice", metadata: JSON.stringify({ n: 2.0 }) } }));
  assert.deepEqual(page.items.map((i) => i.id), [added.id]);

  const history = store.history(added.id);
  assert.deepEqual(history.map((e) => e.event), ["created", "replaced"]);
  assert.deepEqual(history[1].fields, ["text", "metadata"]);

  // Refusals keep their codes: a key in use, metadata that is not an object or too large.
  assert.equal(errorOf(() => store.ingest([{ text: "x", scope: home, key: "locker" }])).code, "invalid-input");
  assert.equal(errorOf(() => store.upsert([{ text: "x", scope: home, key: "k", metadata: "[1]" }])).code, "invalid-input");
  const big = JSON.stringify({ blob: "x".repeat(20_000) });
  assert.equal(errorOf(() => store.upsert([{ text: "x", scope: home, key: "k", metadata: big }])).code, "too-large");

  // A hard delete erases the memory with its history: no byte of either text stays.
  const deleted = store.deleteAll({ userId: "alice", metadata: JSON.stringify({ kind: "code" }) }, true);
  assert.equal(deleted.deleted, 1);
  assert.equal(errorOf(() => store.history(added.id)).code, "not-found");
  const bytes = Buffer.concat([...storage.map.values()].map((v) => Buffer.from(v)));
  assert.ok(!bytes.includes("4411") && !bytes.includes("9922"));
  assert.equal(store.list(listQuery()).items.length, 1);
});

test("a conversation is ingested from chat messages, with who said each part", async () => {
  const store = await open(new MapStorage());
  const messages = JSON.stringify([
    { role: "system", content: "Be brief." },
    { role: "user", name: "Caroline", content: "I repaint my bike every spring." },
    { role: "assistant", content: [
      { type: "text", text: "A fresh coat keeps the rust away." },
      { type: "tool_use", id: "t1", name: "note", input: { bike: true } },
    ] },
  ]);
  const results = store.ingestMessages(messages, {
    scope: home,
    include: ["text", "tool-call"],
    speakers: [{ role: "assistant", name: "Bot" }],
  });
  assert.deepEqual(results.map((r) => [r.message, r.part, r.result.outcome]), [[1, 0, "added"], [2, 0, "added"], [2, 1, "added"]]);
  const items = results.map((r) => store.get(r.result.id));
  assert.deepEqual(items.map((i) => [i.role, i.speaker]), [["user", "Caroline"], ["assistant", "Bot"], ["assistant", "Bot"]]);
  assert.equal(items[2].text, 'tool call note: {"bike":true}');
  assert.equal(items[1].follows, items[0].id);
  const hits = store.retrieve(retrieveQuery("bike", home, { roles: ["user"] }));
  assert.deepEqual(hits.map((h) => h.item.id), [items[0].id]);
  assert.equal(store.list(listQuery({ roles: ["assistant"] })).items.length, 2);
  // A patch corrects who said it; the role filter and the history follow.
  const fixed = store.update(items[0].id, { role: "assistant", speaker: "Bot" });
  assert.deepEqual([fixed.role, fixed.speaker], ["assistant", "Bot"]);
  assert.equal(store.list(listQuery({ roles: ["assistant"] })).items.length, 3);
  assert.deepEqual(store.history(items[0].id).at(-1).fields, ["role", "speaker"]);
  assert.equal(store.update(items[0].id, { speaker: "" }).speaker, undefined);
  const bad = errorOf(() => store.ingestMessages("[{\"role\": \"narrator\"}]", { scope: home }));
  assert.equal(bad.code, "invalid-input");
  assert.match(bad.message, /messages\[0\]: role/);
  assert.equal(errorOf(() => store.ingestMessages("not json", { scope: home })).code, "invalid-input");
});

test("apply-operations applies a model's reply in one commit and supersedes; a bad reply changes nothing", async () => {
  const storage = new MapStorage();
  const store = await open(storage);
  const [coffee, key] = store.ingest(inputs.slice(0, 2)).map((r) => r.id);
  const reply = "Here you go:\n```json\n" + JSON.stringify([
    { op: "update", id: coffee, text: "I switched to flat whites." },
    { op: "add", text: "Lives in Porto", kind: "fact" },
    { op: "none" },
  ]) + "\n```";
  const done = store.applyOperations(home, [coffee, key], reply);
  assert.equal(done.added.length, 2);
  assert.deepEqual(done.superseded, [{ id: coffee, by: done.added[0] }]);
  assert.deepEqual(done.deleted, []);
  const old = store.get(coffee);
  assert.equal(old.supersededBy, done.added[0]);
  assert.ok(old.supersededAt);
  assert.deepEqual(store.get(done.added[0]).supersedes, [coffee]);
  assert.deepEqual(store.history(coffee).map((e) => [e.event, e.other]).at(-1), ["superseded", done.added[0]]);
  const hits = store.retrieve(retrieveQuery("coffee cortado flat whites", home, { dryRun: true }));
  assert.deepEqual(hits.map((h) => h.item.id), [done.added[0]]);
  assert.ok(!store.list(listQuery()).items.some((i) => i.id === coffee));
  assert.ok(store.list(listQuery({ includeSuperseded: true })).items.some((i) => i.id === coffee));

  const before = store.list(listQuery({ includeDeleted: true, includeSuperseded: true }));
  for (const bad of [
    "nothing to remember",
    JSON.stringify([{ op: "add", text: "ok" }, { op: "delete", id: "01NOTSHOWN" }]),
    JSON.stringify([{ op: "add", text: "ok" }, { op: "rename", id: key }]),
    JSON.stringify([{ op: "update", id: coffee, text: "espresso" }]),
  ]) {
    assert.equal(errorOf(() => store.applyOperations(home, [coffee, key], bad)).code, "invalid-operations", bad);
  }
  assert.deepEqual(store.list(listQuery({ includeDeleted: true, includeSuperseded: true })), before);

  const keyed = (text) => ({ text, scope: home, key: "city", supersede: true });
  const first = store.upsert([keyed("I live in Porto")]);
  const second = store.upsert([keyed("I moved to Berlin")]);
  assert.equal(second[0].outcome, "superseded");
  assert.equal(store.get(first[0].id).supersededBy, second[0].id);
});

test("session recall, scope order, the pinned share and archive:false reach the core", async () => {
  const store = await open(new MapStorage());
  const chat = (sessionId) => scope("alice", "chat", { sessionId });
  const [earlier, , hot] = store.ingest([
    { text: "We decided to repaint the kitchen green.", scope: chat("s1") },
    { text: "The kitchen paint should be a matte finish.", scope: scope("alice", "chat") },
    { text: "Always answer in French.", scope: scope("alice", "chat"), pinned: true },
  ]).map((r) => r.id);
  const ask = (extra) => store.retrieve(retrieveQuery("what colour for the kitchen?", chat("s2"), { dryRun: true, ...extra }));
  assert.ok(ask({}).some((h) => h.item.id === earlier), "sessions default to all");
  assert.ok(ask({ sessions: "all" }).some((h) => h.item.id === earlier));
  assert.ok(!ask({ sessions: "current" }).some((h) => h.item.id === earlier), "current keeps other sessions out");
  // Strict scope order puts the asking session's memories before the workspace's.
  const strict = store.retrieve(retrieveQuery("kitchen paint", chat("s1"), { dryRun: true, scopeOrder: "strict" }));
  assert.equal(strict[0].item.id, earlier);
  const hotOnly = store.inject({ query: retrieveQuery("kitchen paint", chat("s1"), { dryRun: true }), budgetTokens: 200, archive: false });
  assert.deepEqual(hotOnly.used, [hot]);
  const noPinned = store.inject({ query: retrieveQuery("kitchen paint", chat("s1"), { dryRun: true }), budgetTokens: 200, pinnedShare: 0 });
  assert.ok(!noPinned.used.includes(hot), "a pinned share of 0 leaves pinned memories out");
  assert.ok(noPinned.used.includes(earlier));
  assert.equal(errorOf(() => store.inject({ query: retrieveQuery("x", chat("s1")), budgetTokens: 200, pinnedShare: 2 })).code, "invalid-input");
});

test("a summary is stored linked to its sources, replaced in place and erased with them", async () => {
  const storage = new MapStorage();
  const store = await open(storage);
  const s1 = scope("alice", "chat", { sessionId: "s1" });
  const ids = store.ingest([
    { text: "We are planning a trip to Lisbon in June.", scope: s1 },
    { text: "The door code of the flat is 4417.", scope: s1 },
  ]).map((r) => r.id);
  const context = store.summaryContext({ scope: s1, includePii: false });
  assert.deepEqual(context.memories.map((m) => m.id), ids);
  assert.equal(context.previous, undefined);
  const summary = store.storeSummary({ scope: s1, text: "A June trip to Lisbon; door code 4417.", sources: ids });
  assert.equal(summary.kind, "summary");
  assert.deepEqual(summary.summaryOf, [...ids].sort());
  assert.equal(store.summaryContext({ scope: s1, includePii: false }).previous.id, summary.id);
  const again = store.storeSummary({ scope: s1, text: "A June trip to Lisbon.", sources: [ids[0]] });
  assert.equal(again.id, summary.id);
  assert.deepEqual(again.summaryOf, [ids[0]]);
  assert.equal(errorOf(() => store.storeSummary({ scope: scope("alice", "chat", { sessionId: "s2" }), text: "x", sources: [ids[1]] })).code, "invalid-input");
  assert.equal(errorOf(() => store.storeSummary({ scope: s1, text: "x", sources: ["nosuchid"] })).code, "not-found");
  store.delete(ids[0], true);
  assert.equal(errorOf(() => store.get(summary.id)).code, "not-found");
  const bytes = [...storage.map.values()].map((v) => Buffer.from(v).toString("latin1")).join("");
  assert.ok(!bytes.includes("A June trip"), "no byte of the summary is left");
});

test("a summary withdrawn with its source is marked withdrawn and comes back, however long ago", async () => {
  const store = await open(new MapStorage());
  const s1 = scope("alice", "chat", { sessionId: "s1" });
  const [door] = store.ingest([{ text: "The door code of the flat is 4417.", scope: s1 }]).map((r) => r.id);
  const summary = store.storeSummary({ scope: s1, text: "Door code 4417.", sources: [door] });
  assert.equal(summary.withdrawn, false);
  store.delete(door, false);
  assert.equal(store.get(summary.id).withdrawn, true);
  // One event more than the 32 the history keeps: `withdrawn` drops out.
  for (let i = 0; i < 33; i++) store.update(summary.id, { pinned: i % 2 === 0 });
  assert.ok(!store.history(summary.id).some((e) => e.event === "withdrawn"));
  store.update(door, { deleted: false });
  const back = store.get(summary.id);
  assert.equal(back.deletedAt, undefined);
  assert.equal(back.withdrawn, false);
  assert.equal(store.history(summary.id).at(-1).event, "restored");
});
