// Node tests of the npm package's Markdown-file API (dist/memtide, from
// scripts/build-pkg.sh): syncFile/removeFile/file, Claude's memory tool
// (memoryTool) and the hot memory file (renderHotFile/readHotFile), through
// the typed JavaScript surface, lexical-only (no model needed).
// Run: node --test tests/js/files.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory, MemtideError } from "../../dist/memtide/node.js";
import { rejectsWith } from "./rejects.mjs";
import { mapAdapter, snapshot } from "./map-adapter.mjs";

const home = { userId: "alice", workspaceId: "home" };
const bob = { userId: "bob", workspaceId: "home" };

const notes = Array.from({ length: 40 }, (_, i) => `Line ${i + 1} is about the topic number ${i + 1} of the notes.\n`).join("") +
  "The espresso machine is descaled every Sunday.\n";

test("a synced file is stored, chunked, retrieved and cited by path and lines", async () => {
  const mem = await Memory.open({ storage: "memory" });
  const sync = await mem.syncFile({ scope: home, path: "notes/MEMORY.md", content: notes });
  assert.equal(sync.path, "notes/MEMORY.md");
  assert.equal(sync.outcome, "created");
  assert.equal(sync.removed, 0);
  assert.ok(sync.chunks.length >= 2, `a 41-line file makes several chunks: ${sync.chunks.length}`);

  const file = await mem.file({ scope: home, path: "notes/MEMORY.md" });
  assert.deepEqual(Object.keys(file).sort(), ["content", "contentHash", "path", "scope", "updatedAt"]);
  assert.equal(file.content, notes);
  assert.deepEqual(file.scope, home);
  assert.match(file.contentHash, /^[0-9a-f]{64}$/);
  assert.match(file.updatedAt, /^\d{4}-\d\d-\d\dT/);
  assert.equal(await mem.file({ scope: home, path: "other.md" }), null);
  assert.equal(await mem.file({ scope: bob, path: "notes/MEMORY.md" }), null, "files are private to their scope");

  const chunks = await Promise.all(sync.chunks.map((id) => mem.get(id)));
  assert.ok(chunks.every((c) => c.kind === "document" && c.source.kind === "file" && c.source.ref === "notes/MEMORY.md"));
  assert.equal(chunks[0].sourceLines.start, 1);
  assert.equal(chunks.at(-1).sourceLines.end, 41);

  await mem.ingest({ text: "The espresso beans come from Berlin", scope: home });
  const hits = await mem.retrieve({ text: "when is the espresso machine descaled", scope: home });
  const top = hits[0].item;
  assert.equal(top.source.ref, "notes/MEMORY.md");
  assert.ok(top.sourceLines.end === 41 && top.sourceLines.start < 41, JSON.stringify(top.sourceLines));
  assert.match(hits[0].citation, /^notes\/MEMORY\.md#L\d+-L41$/);
  const plain = hits.find((h) => h.item.sourceLines === undefined);
  assert.ok(plain, "a plain memory has no sourceLines");
  assert.equal(plain.citation, `memory:${plain.item.id}`);
  for (const format of ["markdown", "xml"]) {
    const { block, used, citations } = await mem.inject({ text: "espresso machine descaled", scope: home, budgetTokens: 2000, format });
    assert.ok(used.includes(top.id));
    const { tag } = citations.find((c) => c.id === top.id);
    assert.ok(block.includes(`[${tag}] [${hits[0].citation}]`), `${format}: ${block}`);
  }
  assert.deepEqual(await mem.retrieve({ text: "espresso machine descaled", scope: bob }), []);
  await mem.close();
});

test("an unchanged re-sync writes nothing; a changed file replaces its chunks; removeFile erases them", async () => {
  const adapter = mapAdapter({ atomic: true });
  const mem = await Memory.open({ storage: adapter });
  const first = await mem.syncFile({ scope: home, path: "MEMORY.md", content: notes });

  const writes = adapter.writes;
  const before = snapshot(adapter.map);
  const again = await mem.syncFile({ scope: home, path: "MEMORY.md", content: notes });
  assert.deepEqual(again, { ...first, outcome: "unchanged" });
  assert.equal(adapter.writes, writes, "no storage write");
  assert.deepEqual(snapshot(adapter.map), before);

  const changed = notes.replace("every Sunday", "on the first Monday of the month");
  const updated = await mem.syncFile({ scope: home, path: "MEMORY.md", content: changed });
  assert.equal(updated.outcome, "updated");
  assert.equal(updated.removed, first.chunks.length);
  assert.equal(adapter.writes, writes + 1, "one atomic batch");
  for (const id of first.chunks) {
    assert.ok(!updated.chunks.includes(id), "new chunks get fresh ids");
    await rejectsWith(mem.get(id), "NOT_FOUND");
  }
  assert.equal((await mem.file({ scope: home, path: "MEMORY.md" })).content, changed);
  const hits = await mem.retrieve({ text: "descaled first Monday", scope: home });
  assert.ok(updated.chunks.includes(hits[0].item.id));
  assert.ok(hits[0].item.text.includes("first Monday"));
  assert.ok(!(await mem.retrieve({ text: "Sunday", scope: home })).some((h) => h.item.text.includes("every Sunday")));

  assert.equal(await mem.removeFile({ scope: bob, path: "MEMORY.md" }), false, "another scope's file is not there");
  assert.equal(await mem.removeFile({ scope: home, path: "MEMORY.md" }), true);
  assert.equal(await mem.removeFile({ scope: home, path: "MEMORY.md" }), false);
  assert.equal(await mem.file({ scope: home, path: "MEMORY.md" }), null);
  assert.equal((await mem.stats()).items, 0, "no chunk outlives its file");
});

test("the memory tool's commands give the documented result strings", async () => {
  const mem = await Memory.open({ storage: "memory" });
  const call = (input) => mem.memoryTool(home, input);
  const ok = async (input, content) => assert.deepEqual(await call(input), { content, isError: false });
  const fails = async (input, content) => assert.deepEqual(await call(input), { content, isError: true });
  const listing = "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:";

  await ok({ command: "view", path: "/memories" }, `${listing}\n0B\t/memories`);
  await ok({ command: "create", path: "/memories/prefs.md", file_text: "a\nb\ncoffee: cortado\nd\ne\nf\n" },
    "File created successfully at: /memories/prefs.md");
  await fails({ command: "create", path: "/memories/prefs.md", file_text: "again" }, "Error: File /memories/prefs.md already exists");
  await ok({ command: "view", path: "/memories" }, `${listing}\n26B\t/memories\n26B\t/memories/prefs.md`);
  await ok({ command: "view", path: "/memories/prefs.md", view_range: [2, 3] },
    "Here's the content of /memories/prefs.md with line numbers:\n     2\tb\n     3\tcoffee: cortado");
  await ok({ command: "str_replace", path: "/memories/prefs.md", old_str: "cortado", new_str: "flat white\nwith oat milk" },
    "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" +
    "     1\ta\n     2\tb\n     3\tcoffee: flat white\n     4\twith oat milk\n     5\td\n     6\te");
  await fails({ command: "str_replace", path: "/memories/prefs.md", old_str: "espresso", new_str: "x" },
    "No replacement was performed, old_str `espresso` did not appear verbatim in /memories/prefs.md.");
  await fails({ command: "str_replace", path: "/memories/none.md", old_str: "a", new_str: "b" },
    "Error: The path /memories/none.md does not exist. Please provide a valid path.");
  await ok({ command: "insert", path: "/memories/prefs.md", insert_line: 0, insert_text: "# Preferences\n" },
    "The file /memories/prefs.md has been edited.");
  await fails({ command: "insert", path: "/memories/prefs.md", insert_line: 99, insert_text: "x" },
    "Error: Invalid `insert_line` parameter: 99. It should be within the range of lines of the file: [0, 8]");
  assert.equal((await mem.file({ scope: home, path: "/memories/prefs.md" })).content,
    "# Preferences\na\nb\ncoffee: flat white\nwith oat milk\nd\ne\nf\n");

  // What the model wrote is retrievable and cited by file and lines.
  const [hit] = await mem.retrieve({ text: "oat milk flat white", scope: home });
  assert.equal(hit.citation, "/memories/prefs.md#L1-L8");

  await ok({ command: "rename", old_path: "/memories/prefs.md", new_path: "/memories/me/prefs.md" },
    "Successfully renamed /memories/prefs.md to /memories/me/prefs.md");
  assert.equal((await mem.get(hit.item.id)).source.ref, "/memories/me/prefs.md", "chunks move with their file");
  await fails({ command: "rename", old_path: "/memories/prefs.md", new_path: "/memories/x.md" },
    "Error: The path /memories/prefs.md does not exist");
  await ok({ command: "delete", path: "/memories/me" }, "Successfully deleted /memories/me");
  await fails({ command: "delete", path: "/memories/me" }, "Error: The path /memories/me does not exist");
  await fails({ command: "delete", path: "/memories" }, "Error: Cannot delete the /memories directory itself");
  assert.equal((await mem.stats()).items, 0);

  // Malformed calls are tool errors for the model, not exceptions.
  await fails({ command: "launch", path: "/memories" },
    "Error: Unknown command `launch`. The commands are: view, create, str_replace, insert, delete, rename");
  await fails({ path: "/memories" }, "Error: the input has no `command`");
  await fails(null, "Error: the input has no `command`");
  const mistyped = await call({ command: "insert", path: "/memories/a.md", insert_line: "one", insert_text: "x" });
  assert.equal(mistyped.isError, true);
  assert.match(mistyped.content, /^Error: Invalid input for the `insert` command: /);

  // Each scope has its own /memories.
  await ok({ command: "create", path: "/memories/alice.md", file_text: "Alice's plan" }, "File created successfully at: /memories/alice.md");
  assert.deepEqual(await mem.memoryTool(bob, { command: "view", path: "/memories" }), { content: `${listing}\n0B\t/memories`, isError: false });
});

test("every path traversal class is refused through the JS surface and writes nothing", async () => {
  const adapter = mapAdapter();
  const mem = await Memory.open({ storage: adapter });
  await mem.memoryTool(home, { command: "create", path: "/memories/ok.md", file_text: "fine" });
  const before = snapshot(adapter.map);
  const refused = [
    ["/memories/../etc/passwd", "/memories/../etc/passwd", "`.` and `..` path segments are not allowed"],
    ["/memories/%2e%2e%2fetc/passwd", "/memories/%2e%2e%2fetc/passwd", "percent-encoded sequences (such as `%2e`) are not allowed in paths"],
    ["/etc/passwd", "/etc/passwd", "the path must be /memories or lie under /memories"],
    ["/memories\\..\\etc", "/memories\\\\..\\\\etc", "backslashes are not allowed in paths"],
    ["/memories/a\0b.md", "/memories/a\\0b.md", "control characters are not allowed in paths"],
  ];
  for (const [path, shown, reason] of refused) {
    const content = `Error: The path ${shown} is not allowed: ${reason}`;
    for (const input of [
      { command: "view", path },
      { command: "create", path, file_text: "x" },
      { command: "str_replace", path, old_str: "fine", new_str: "x" },
      { command: "insert", path, insert_line: 0, insert_text: "x" },
      { command: "delete", path },
      { command: "rename", old_path: "/memories/ok.md", new_path: path },
      { command: "rename", old_path: path, new_path: "/memories/new.md" },
    ]) {
      assert.deepEqual(await mem.memoryTool(home, input), { content, isError: true }, JSON.stringify(input));
    }
  }
  // syncFile paths follow the same rules (any absolute path is a name
  // there, not a place on disk); a refusal is an INVALID_INPUT error.
  for (const [path, reason] of [
    ["../etc/passwd", /`\.` and `\.\.` path segments/],
    ["notes/%2e%2e%2fpasswd", /percent-encoded/],
    ["notes\\..\\passwd", /backslashes/],
    ["notes/a\0b.md", /control characters/],
    ["notes//a.md", /empty path segments/],
    ["", /the path is empty/],
  ]) {
    await rejectsWith(mem.syncFile({ scope: home, path, content: "x" }), "INVALID_INPUT", reason);
    await rejectsWith(mem.readHotFile({ scope: home, path, document: "- x\n" }), "INVALID_INPUT", reason);
  }
  assert.deepEqual(snapshot(adapter.map), before, "nothing was written");
  assert.equal((await mem.file({ scope: home, path: "/memories/ok.md" })).content, "fine");
});

test("the hot file renders the pinned memories and reads human edits back", async () => {
  const mem = await Memory.open({ storage: "memory" });
  // The block lists oldest first (ties broken by id): distinct creation times.
  const [coffee, tea, water] = (await mem.ingest(["coffee black", "tea green", "water still"].map(
    (text, i) => ({ text, scope: home, pinned: true, createdAt: `2026-01-0${i + 1}T00:00:00Z` }),
  ))).map((r) => r.id);
  await mem.ingest({ text: "not pinned", scope: home });
  await mem.ingest({ text: "pinned elsewhere", scope: bob, pinned: true });

  const human = "# USER.md\n\nWritten by hand.";
  const rendered = await mem.renderHotFile(home, human);
  const block = "<!-- mnemo:begin pinned -->\n" +
    `- coffee black <!-- mnemo:id=${coffee} -->\n- tea green <!-- mnemo:id=${tea} -->\n- water still <!-- mnemo:id=${water} -->\n` +
    "<!-- mnemo:end pinned -->\n";
  assert.equal(rendered, `${human}\n\n${block}`);
  assert.equal(await mem.renderHotFile(home, rendered), rendered, "rendering again changes nothing");
  await rejectsWith(mem.renderHotFile(home, "<!-- mnemo:begin pinned -->\n- x\n"), "INVALID_INPUT", /never closes/);

  const edited = rendered
    .replace("coffee black", "coffee as a cortado")
    .replace(`- tea green <!-- mnemo:id=${tea} -->\n`, "")
    .replace("<!-- mnemo:end pinned -->", "- I live in   Berlin\n<!-- mnemo:end pinned -->");
  const sync = await mem.readHotFile({ scope: home, path: "USER.md", document: edited });
  assert.deepEqual(Object.keys(sync).sort(), ["added", "pinned", "unpinned", "updated"]);
  assert.deepEqual(sync.updated, [coffee]);
  assert.deepEqual(sync.unpinned, [tea]);
  assert.deepEqual(sync.pinned, []);
  assert.equal(sync.added.length, 1);
  const added = await mem.get(sync.added[0]);
  assert.deepEqual([added.text, added.kind, added.pinned, added.source.ref], ["I live in Berlin", "fact", true, "USER.md"]);
  assert.equal((await mem.get(coffee)).text, "coffee as a cortado");
  const unpinned = await mem.get(tea);
  assert.ok(!unpinned.pinned && !unpinned.deletedAt, "removed from the file means unpinned, not deleted");

  // render -> read back -> render converges.
  const rerendered = await mem.renderHotFile(home, edited);
  const nothing = await mem.readHotFile({ scope: home, path: "USER.md", document: rerendered });
  assert.deepEqual(nothing, { added: [], updated: [], pinned: [], unpinned: [] });
  assert.equal(await mem.renderHotFile(home, rerendered), rerendered);
  assert.ok(!(await mem.renderHotFile(bob, "")).includes("coffee"), "another scope's block lists only its own");
});

for (const atomic of [false, true]) {
  test(`files, tool writes and hot file edits persist across reopen (adapter ${atomic ? "with" : "without"} batch)`, async () => {
    const adapter = mapAdapter({ atomic });
    const mem = await Memory.open({ storage: adapter });
    await mem.syncFile({ scope: home, path: "MEMORY.md", content: notes });
    await mem.memoryTool(home, { command: "create", path: "/memories/plans/launch.md", file_text: "The launch is on Friday.\n" });
    await mem.ingest({ text: "coffee black", scope: home, pinned: true });
    const hot = await mem.renderHotFile(home, "# Me\n");
    await mem.readHotFile({ scope: home, path: "USER.md", document: hot.replace("<!-- mnemo:end", "- tea green\n<!-- mnemo:end") });
    const before = {
      memory: await mem.file({ scope: home, path: "MEMORY.md" }),
      launch: await mem.file({ scope: home, path: "/memories/plans/launch.md" }),
      view: await mem.memoryTool(home, { command: "view", path: "/memories" }),
      hot: await mem.renderHotFile(home, "# Me\n"),
      export: JSON.parse(await mem.export()).items,
    };
    await mem.close();
    await rejectsWith(mem.file({ scope: home, path: "MEMORY.md" }), "CLOSED");

    const reopened = await Memory.open({ storage: adapter });
    assert.deepEqual(await reopened.file({ scope: home, path: "MEMORY.md" }), before.memory);
    assert.deepEqual(await reopened.file({ scope: home, path: "/memories/plans/launch.md" }), before.launch);
    assert.deepEqual(await reopened.memoryTool(home, { command: "view", path: "/memories" }), before.view);
    assert.equal(await reopened.renderHotFile(home, "# Me\n"), before.hot);
    assert.ok(before.hot.includes("- tea green"));
    assert.deepEqual(JSON.parse(await reopened.export()).items, before.export);
    const [hit] = await reopened.retrieve({ text: "when is the launch", scope: home });
    assert.equal(hit.citation, "/memories/plans/launch.md#L1");
    assert.equal((await reopened.syncFile({ scope: home, path: "MEMORY.md", content: notes })).outcome, "unchanged");
    assert.ok([...adapter.map.keys()].every((k) => !k.startsWith("journal/")), "no journal left behind");
  });
}

test("bad arguments and failures are MemtideErrors with stable codes, and the store stays usable", async () => {
  const adapter = mapAdapter({ atomic: true });
  const mem = await Memory.open({ storage: adapter, config: { limits: { maxFileBytes: 64 } } });
  await rejectsWith(mem.syncFile({ scope: home, path: "a.md", content: "x".repeat(65) }), "TOO_LARGE", /file `a\.md` is too large/);
  await rejectsWith(mem.syncFile({ scope: { userId: "", workspaceId: "home" }, path: "a.md", content: "x" }), "INVALID_INPUT");
  await rejectsWith(mem.syncFile({ scope: home, path: "a.md" }), "INVALID_INPUT", /^invalid input: file: missing field `content`/);
  await rejectsWith(mem.syncFile({ scope: home, path: "a.md", content: "x", contents: "y" }), "INVALID_INPUT", /unknown field `contents`/);
  await rejectsWith(mem.syncFile({ scope: home, path: "a.md", content: new Uint8Array([104, 105]) }), "INVALID_INPUT", /expected a string/);
  await rejectsWith(mem.syncFile({ scope: home, path: "a.md", content: "lone \ud800 surrogate" }), "INVALID_INPUT");
  await rejectsWith(mem.syncFile(undefined), "INVALID_INPUT", /file is missing/);
  await rejectsWith(mem.removeFile({ scope: home }), "INVALID_INPUT", /missing field `path`/);
  await rejectsWith(mem.file({ path: "a.md" }), "INVALID_INPUT", /missing field `scope`/);
  await rejectsWith(mem.memoryTool(home, undefined), "INVALID_INPUT", /input is missing/);
  await rejectsWith(mem.memoryTool({ userId: "alice" }, { command: "view", path: "/memories" }), "INVALID_INPUT", /scope/);
  await rejectsWith(mem.memoryTool(home, { command: "view", path: "/memories", view_range: [1, NaN] }), "INVALID_INPUT", /finite/);
  await rejectsWith(mem.renderHotFile(home, 42), "INVALID_INPUT", /document/);
  await rejectsWith(mem.readHotFile({ scope: home, path: "USER.md" }), "INVALID_INPUT", /missing field `document`/);
  // A file over the limit written by the model is a tool error it can read.
  const big = await mem.memoryTool(home, { command: "create", path: "/memories/big.md", file_text: "x".repeat(65) });
  assert.equal(big.isError, true);
  assert.match(big.content, /^Error: file `\/memories\/big\.md` is too large/);

  // A failed commit is the host's problem: a STORAGE rejection, nothing applied.
  const before = snapshot(adapter.map);
  adapter.failWritesFrom = 0;
  await rejectsWith(mem.memoryTool(home, { command: "create", path: "/memories/a.md", file_text: "hello" }), "STORAGE", /disk on fire/);
  await rejectsWith(mem.syncFile({ scope: home, path: "a.md", content: "hello" }), "STORAGE");
  adapter.failWritesFrom = Infinity;
  assert.deepEqual(snapshot(adapter.map), before);
  assert.equal(await mem.file({ scope: home, path: "/memories/a.md" }), null, "the failed write left nothing in memory either");
  assert.deepEqual(await mem.memoryTool(home, { command: "create", path: "/memories/a.md", file_text: "hello" }),
    { content: "File created successfully at: /memories/a.md", isError: false });
  assert.equal((await mem.syncFile({ scope: home, path: "a.md", content: "hello" })).outcome, "created");
  await mem.close();
  await rejectsWith(mem.memoryTool(home, { command: "view", path: "/memories" }), "CLOSED");
  await rejectsWith(mem.renderHotFile(home, ""), "CLOSED");
});

test("an export carries the stored files, whole or for a scope, and an import restores them", async () => {
  const mem = await Memory.open({ storage: "memory" });
  await mem.syncFile({ scope: home, path: "MEMORY.md", content: notes });
  await mem.memoryTool(home, { command: "create", path: "/memories/prefs.md", file_text: "coffee: cortado\n" });
  await mem.memoryTool(bob, { command: "create", path: "/memories/bees.md", file_text: "Bob keeps bees.\n" });
  await mem.ingest({ text: "Bob's hives are on the roof", scope: bob });

  const whole = await mem.export();
  const doc = JSON.parse(whole);
  assert.equal(doc.version, 2);
  assert.equal(doc.fileCount, 3);
  const copy = await Memory.open({ storage: "memory" });
  const result = await copy.import(whole);
  assert.equal(result.files, 3);
  assert.equal(result.added, doc.itemCount);
  for (const [scope, path] of [[home, "MEMORY.md"], [home, "/memories/prefs.md"], [bob, "/memories/bees.md"]]) {
    assert.deepEqual(await copy.file({ scope, path }), await mem.file({ scope, path }));
  }
  assert.deepEqual(await copy.memoryTool(home, { command: "view", path: "/memories" }),
    await mem.memoryTool(home, { command: "view", path: "/memories" }));
  const [hit] = await copy.retrieve({ text: "what coffee", scope: home, dryRun: true });
  assert.equal(hit.citation, "/memories/prefs.md#L1");
  assert.equal((await copy.syncFile({ scope: home, path: "MEMORY.md", content: notes })).outcome, "unchanged");

  const bobs = JSON.parse(await mem.export({ userId: "bob" }));
  assert.deepEqual(bobs.filter, { userId: "bob" });
  assert.deepEqual(bobs.files.map((f) => f.path), ["/memories/bees.md"]);
  assert.ok(bobs.items.every((i) => i.scope.userId === "bob") && bobs.items.length === 2, JSON.stringify(bobs.items));
  await rejectsWith(mem.export({ userId: "bob", team: "x" }), "INVALID_INPUT", /unknown field `team`/);
  const flipped = whole.replace(/"filesChecksum":"(.)/, (m, c) => m.slice(0, -1) + (c === "0" ? "1" : "0"));
  await rejectsWith(copy.import(flipped), "CORRUPT", /its files/);
  await mem.close();
  await copy.close();
});
