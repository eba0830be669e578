// The built package in a real browser tab: headless Debian Chromium driven by
// playwright-core. A local server serves dist/memtide and the model files; the
// page imports the package's browser entry point. Checks the default
// IndexedDB storage across a page reload, fetchModel's progress and its
// Cache API copy on the second load, two tabs on one database, Markdown
// files and the memory tool loop of memtide/anthropic kept in
// IndexedDB, errors, that the .wasm is compiled while it downloads, and
// that the allocators reuse what a store frees (tests/js/allocator.mjs).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { servePackage } from "./chromium.mjs";

const modelDir = process.env.MEMTIDE_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { encoding: "utf8" }).trim().split("\n").pop();
const page = `<!doctype html><meta charset="utf-8"><title>memtide package test</title>
<script type="module">
  import { Memory, MemtideError } from "/dist/memtide/browser.js";
  import { fetchModel } from "/dist/memtide/model.js";
  window.memtide = { Memory, MemtideError, fetchModel };
  document.title = "ready";
</script>`;
// Records each call of WebAssembly's compiling functions (and the kind of
// its first argument) before the package is imported.
const compileWatch = `<!doctype html><meta charset="utf-8"><title>compile watch</title>
<script type="module">
  window.compileCalls = [];
  for (const name of ["instantiateStreaming", "compileStreaming", "instantiate", "compile"]) {
    const original = WebAssembly[name];
    WebAssembly[name] = function (...args) {
      window.compileCalls.push([name, args[0]?.constructor?.name]);
      return original.apply(this, args);
    };
  }
  document.title = "ready";
</script>`;

let site;
let base;
let browser;
let requests;
const openTab = (context) => site.openTab(context);

before(async () => {
  site = await servePackage(async (path) => {
    if (path === "/") return page;
    if (path === "/compile-watch") return compileWatch;
    if (path.startsWith("/model/")) return readFile(`${modelDir}/${path.slice(7)}`);
    if (path === "/tests/allocator.js") return readFile(new URL("./allocator.mjs", import.meta.url));
    return undefined;
  });
  ({ base, browser, requests } = site);
});

after(() => site?.close());

test("IndexedDB by default, kept across a reload; the model cached after the first load", async () => {
  const context = await browser.newContext();
  const tab = await openTab(context);
  const first = await tab.evaluate(async () => {
    const { Memory, fetchModel } = window.memtide;
    const progress = [];
    const model = await fetchModel({
      onnxUrl: "/model/model.onnx",
      tokenizerUrl: "/model/tokenizer.json",
      onProgress: (p) => progress.push(p.loaded),
    });
    const stages = [];
    const mem = await Memory.open({ name: "reload", model, onProgress: (p) => stages.push(p.stage) });
    const home = { userId: "ann", workspaceId: "home" };
    const work = { userId: "ann", workspaceId: "work" };
    await mem.ingest([
      { text: "My sister's birthday is on the ninth of March.", scope: home },
      { text: "The quarterly report is due on the ninth of March.", scope: work },
      { text: "I water the ferns every Sunday morning.", scope: home },
    ]);
    const hits = await mem.retrieve({ text: "when is my sister's birthday?", scope: home });
    const stats = await mem.stats();
    await mem.close();
    return {
      fromCache: model.fromCache, progressEvents: progress.length, stages,
      top: hits[0].item.text, workspaces: hits.map((h) => h.item.scope.workspaceId), stats,
    };
  });
  assert.equal(first.fromCache, false);
  assert.ok(first.progressEvents > 2);
  assert.deepEqual(first.stages, ["storage", "model", "embedding", "embedded", "ready"]);
  assert.equal(first.top, "My sister's birthday is on the ninth of March.");
  assert.ok(first.workspaces.every((w) => w === "home"), "the other workspace's memory is absent");
  assert.equal(first.stats.retrievalMode, "hybrid");

  const modelRequests = requests.filter((r) => r === "/model/model.onnx").length;
  await tab.reload();
  await tab.waitForFunction(() => document.title === "ready");
  const second = await tab.evaluate(async () => {
    const { Memory, fetchModel } = window.memtide;
    const model = await fetchModel({ onnxUrl: "/model/model.onnx", tokenizerUrl: "/model/tokenizer.json" });
    const mem = await Memory.open({ name: "reload", model });
    const home = { userId: "ann", workspaceId: "home" };
    const hits = await mem.retrieve({ text: "plants watering day", scope: home });
    const items = (await mem.stats()).items;
    await mem.close();
    return { fromCache: model.fromCache, items, top: hits[0]?.item.text };
  });
  assert.equal(second.fromCache, true);
  assert.equal(requests.filter((r) => r === "/model/model.onnx").length, modelRequests, "no second download");
  assert.equal(second.items, 3);
  assert.equal(second.top, "I water the ferns every Sunday morning.");
  await context.close();
});

test("two tabs on one database see each other's writes", async () => {
  const context = await browser.newContext();
  const [tabA, tabB] = [await openTab(context), await openTab(context)];
  await tabB.evaluate(async () => {
    window.changes = 0;
    window.mem = await window.memtide.Memory.open({ name: "tabs", onChange: () => window.changes++ });
  });
  await tabA.evaluate(async () => {
    window.mem = await window.memtide.Memory.open({ name: "tabs" });
  });
  const scope = { userId: "ann", workspaceId: "shared" };
  await Promise.all([
    tabA.evaluate(async (scope) => {
      for (let i = 0; i < 8; i++) await window.mem.ingest({ text: `Tab A note ${i} about apples.`, scope });
    }, scope),
    tabB.evaluate(async (scope) => {
      for (let i = 0; i < 8; i++) await window.mem.ingest({ text: `Tab B note ${i} about pears.`, scope });
    }, scope),
  ]);
  await tabA.evaluate((scope) => window.mem.ingest({ text: "Tab A's last word on plums.", scope }), scope);
  await tabB.waitForFunction(() => window.changes > 0);
  const seen = await tabB.evaluate(async (scope) => {
    await window.mem.refresh();
    const hits = await window.mem.retrieve({ text: "plums", scope, dryRun: true });
    return { items: (await window.mem.stats()).items, top: hits[0]?.item.text };
  }, scope);
  assert.equal(seen.items, 17);
  assert.equal(seen.top, "Tab A's last word on plums.");
  await context.close();
});

test("files and the memory tool loop run in a tab and stay in IndexedDB across a reload", async () => {
  const context = await browser.newContext();
  const tab = await openTab(context);
  const scope = { userId: "ann", workspaceId: "chat" };
  const first = await tab.evaluate(async (scope) => {
    const { runTurn } = await import("/dist/memtide/anthropic.js");
    const mem = await window.memtide.Memory.open({ name: "files" });
    const synced = await mem.syncFile({ scope, path: "MEMORY.md", content: "# Project\nDeploys run on Tuesdays.\n" });
    const tool = (id, input) => ({ type: "tool_use", id, name: "memory", input });
    const responses = [
      { stop_reason: "tool_use", content: [tool("toolu_01", { command: "create", path: "/memories/prefs.md", file_text: "- coffee: cortado\n" })] },
      { stop_reason: "tool_use", content: [tool("toolu_02", { command: "view", path: "/memories/%2e%2e%2fsecrets" })] },
      { stop_reason: "end_turn", content: [{ type: "text", text: "Saved." }] },
    ];
    let sent = 0;
    const turn = await runTurn({
      memory: mem, scope, createMessage: async () => responses[sent++],
      request: { model: "claude-sonnet-4-5", max_tokens: 256, messages: [{ role: "user", content: "I drink cortados." }] },
    });
    await mem.close();
    const results = turn.messages.filter((m) => m.role === "user" && Array.isArray(m.content)).map((m) => m.content[0]);
    return { outcome: synced.outcome, stop: turn.response.stop_reason, results: results.map((r) => [r.content, r.is_error]) };
  }, scope);
  assert.equal(first.outcome, "created");
  assert.equal(first.stop, "end_turn");
  assert.deepEqual(first.results, [
    ["File created successfully at: /memories/prefs.md", false],
    ["Error: The path /memories/%2e%2e%2fsecrets is not allowed: percent-encoded sequences (such as `%2e`) are not allowed in paths", true],
  ]);

  await tab.reload();
  await tab.waitForFunction(() => document.title === "ready");
  const second = await tab.evaluate(async (scope) => {
    const mem = await window.memtide.Memory.open({ name: "files" });
    const file = await mem.file({ scope, path: "/memories/prefs.md" });
    const [hit] = await mem.retrieve({ text: "cortado", scope });
    const { block } = await mem.inject({ text: "when do deploys run", scope, budgetTokens: 300 });
    const resync = await mem.syncFile({ scope, path: "MEMORY.md", content: "# Project\nDeploys run on Tuesdays.\n" });
    await mem.close();
    return { content: file?.content, ref: hit?.item.source.ref, lines: hit?.item.sourceLines, block, resync: resync.outcome };
  }, scope);
  assert.equal(second.content, "- coffee: cortado\n");
  assert.equal(second.ref, "/memories/prefs.md");
  assert.deepEqual(second.lines, { start: 1, end: 1 });
  assert.match(second.block, /\[MEMORY\.md#L1-L2\]/);
  assert.equal(second.resync, "unchanged");
  await context.close();
});

test("errors in the browser are MemtideErrors with codes", async () => {
  const context = await browser.newContext();
  const tab = await openTab(context);
  const codes = await tab.evaluate(async () => {
    const { Memory, MemtideError } = window.memtide;
    const mem = await Memory.open({ storage: "memory" });
    const codes = [];
    for (const call of [
      () => mem.ingest({ text: "x" }),
      () => mem.retrieve({ text: "q", scope: { userId: "a", workspaceId: "b" }, limit: NaN }),
      () => mem.get("missing"),
    ]) {
      try { await call(); codes.push("resolved"); } catch (e) { codes.push(e instanceof MemtideError ? e.code : String(e)); }
    }
    await mem.close();
    try { await mem.stats(); } catch (e) { codes.push(e.code); }
    return codes;
  });
  assert.deepEqual(codes, ["INVALID_INPUT", "INVALID_INPUT", "NOT_FOUND", "CLOSED"]);
  await context.close();
});

test("the browser entry compiles each .wasm while it downloads (streaming), fetched once, the model's only with a model", async () => {
  const context = await browser.newContext();
  const tab = await context.newPage();
  tab.on("pageerror", (e) => console.error("page error:", e));
  const warnings = [];
  tab.on("console", (m) => m.type() === "warning" && warnings.push(m.text()));
  await tab.goto(`${base}compile-watch`);
  await tab.waitForFunction(() => document.title === "ready");
  const before = requests.filter((path) => path.endsWith(".wasm")).length;
  const found = await tab.evaluate(async () => {
    const { Memory } = await import("/dist/memtide/browser.js");
    const mem = await Memory.open({ storage: "memory" });
    await mem.ingest({ text: "The ferns want water on Sundays.", scope: { userId: "a", workspaceId: "b" } });
    const hits = await mem.retrieve({ text: "ferns", scope: { userId: "a", workspaceId: "b" } });
    await mem.close();
    return hits.length;
  });
  assert.equal(found, 1);
  // A Response handed to instantiateStreaming, never the bytes to
  // instantiate: wasm-bindgen's glue falls back to the bytes (with a
  // warning) when the server's content type is not application/wasm.
  assert.deepEqual(await tab.evaluate(() => window.compileCalls), [["instantiateStreaming", "Response"]]);
  assert.deepEqual(warnings, []);
  // Without a model, the model's module is neither fetched nor compiled.
  assert.deepEqual(requests.filter((path) => path.endsWith(".wasm")).slice(before), ["/dist/memtide/wasm/memtide_bg.wasm"]);
  // A model given later starts the model's module, streaming too.
  const embedded = await tab.evaluate(async () => {
    const { Memory } = await import("/dist/memtide/browser.js");
    const { fetchModel } = await import("/dist/memtide/model.js");
    const mem = await Memory.open({ storage: "memory" });
    await mem.ingest({ text: "The ferns want water on Sundays.", scope: { userId: "a", workspaceId: "b" } });
    const count = await mem.setModel(await fetchModel({ baseUrl: "/model/" }));
    const hits = await mem.retrieve({ text: "when do the plants get watered", scope: { userId: "a", workspaceId: "b" }, explain: true });
    const mode = (await mem.stats()).retrievalMode;
    await mem.close();
    return { count, mode, semantic: hits[0]?.explain.semantic };
  });
  assert.equal(embedded.count, 1);
  assert.equal(embedded.mode, "hybrid");
  assert.ok(embedded.semantic > 0.2, `semantic ${embedded.semantic}`);
  assert.deepEqual(await tab.evaluate(() => window.compileCalls),
    [["instantiateStreaming", "Response"], ["instantiateStreaming", "Response"]]);
  assert.deepEqual(warnings, []);
  assert.deepEqual(requests.filter((path) => path.endsWith(".wasm")).slice(before),
    ["/dist/memtide/wasm/memtide_bg.wasm", "/dist/memtide/wasm/memtide_model_bg.wasm"]);
  await context.close();
});

test("freed memory is reused in a tab, and the model's module reuses each embedding batch's", async () => {
  const context = await browser.newContext();
  const tab = await openTab(context);
  const result = await tab.evaluate(async () => {
    const { churn, embedChurn } = await import("/tests/allocator.js");
    const { Memory, wasmMemoryBytes } = await import("/dist/memtide/browser.js");
    const { fetchModel } = await import("/dist/memtide/model.js");
    const lexical = await churn({ Memory, wasmMemoryBytes });
    const embedded = await embedChurn({ Memory, wasmMemoryBytes, model: await fetchModel({ baseUrl: "/model/" }) });
    return { lexical, embedded };
  });
  const MIB = 2 ** 20;
  const { afterFill, afterOpen, items, hits } = result.lexical;
  assert.ok(items.every((n) => n > 800) && hits > 0, `items ${items}, hits ${hits}`);
  assert.ok(afterFill.at(-1) <= afterFill[1] + MIB, `fills grew memory: ${afterFill}`);
  assert.ok(afterOpen.at(-1) <= afterOpen[0] + MIB, `opens grew memory: ${afterOpen}`);
  const { afterBatch, embedded, items: held } = result.embedded;
  assert.ok(embedded > 0 && embedded === held, `${embedded} of ${held} embedded`);
  assert.ok(afterBatch.at(-1) <= afterBatch[0] + MIB, `batches grew memory: ${afterBatch}`);
  await context.close();
});
