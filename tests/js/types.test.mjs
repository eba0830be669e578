// The package's TypeScript declarations (pkg-template/index.d.ts, written by
// hand) checked against what the package really returns: every call's result
// is written into a TypeScript file as a literal of its declared type and
// compiled strictly. A field the runtime adds, renames or retypes without the
// declarations following is a compile error here. The inputs the tests use
// are checked the same way against the input types.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

import { Memory } from "../../dist/memtide/node.js";
import { typeErrors } from "./typecheck.mjs";

const declarations = fileURLToPath(new URL("../../pkg-template/index.d.ts", import.meta.url));

test("index.d.ts describes every result the package returns", async () => {
  const home = { userId: "alice", workspaceId: "home", projectId: "p1" };
  const inputs = [
    { text: "I take my coffee as a cortado.", scope: home, kind: "preference", tags: ["drinks"],
      source: { kind: "message", ref: "m1", uri: "chat://1" }, privacy: { pii: false, retentionDays: 30 },
      createdAt: "2026-01-02T03:04:05Z", pinned: true, status: "approved" },
    { text: "I take my coffee as a cortado.", scope: home, privacy: { retentionDays: 400 } },
    { text: "Buy oat milk on Friday.", scope: { userId: "alice", workspaceId: "home" } },
  ];
  const mem = await Memory.open({ storage: "memory" });
  const ingested = await mem.ingest(inputs);
  const query = { text: "coffee", scope: home, explain: true, limit: 5, kinds: ["preference"], includePending: true, minRelevance: 0 };
  const hits = await mem.retrieve(query);
  const injectQuery = { text: "coffee", scope: home, budgetTokens: 200, format: "xml", minRelevance: 0.1, preamble: "Notes." };
  const injection = await mem.inject(injectQuery);
  const tight = await mem.inject({ text: "coffee", scope: home, budgetTokens: 3 });
  const item = await mem.get(ingested[0].id);
  const patch = { tags: ["drinks", "morning"], deleted: false, role: "user", speaker: "Ana" };
  const updated = await mem.update(ingested[2].id, patch);
  const listQuery = { scope: { userId: "alice" }, limit: 1, includeDeleted: true };
  const page = await mem.list(listQuery);
  const next = await mem.list({ ...listQuery, cursor: page.nextCursor });
  const stats = await mem.stats();
  const exported = await mem.export();
  const imported = await (await Memory.open({ storage: "memory" })).import(exported);

  // Markdown files, the memory tool and the hot file.
  const config = { limits: { maxFileBytes: 4096 }, chunking: { maxTokens: 64, overlapLines: 1 } };
  const files = await Memory.open({ storage: "memory", config });
  const fileInput = { scope: home, path: "notes/MEMORY.md", content: "# Notes\nThe espresso machine is descaled every Sunday.\n" };
  const fileSyncs = [await files.syncFile(fileInput), await files.syncFile(fileInput)];
  const fileRef = { scope: home, path: "notes/MEMORY.md" };
  const storedFiles = [await files.file(fileRef), await files.file({ scope: home, path: "nope.md" })];
  const toolInputs = [
    { command: "create", path: "/memories/a.md", file_text: "hello\n" },
    { command: "view", path: "/memories/a.md", view_range: [1, 1] },
    { command: "str_replace", path: "/memories/a.md", old_str: "hello", new_str: "hello world" },
    { command: "insert", path: "/memories/a.md", insert_line: 1, insert_text: "bye" },
    { command: "rename", old_path: "/memories/a.md", new_path: "/memories/b.md" },
    { command: "view", path: "/memories" },
    { command: "delete", path: "/memories/b.md" },
    { command: "view", path: "/memories/../etc" },
  ];
  const toolResults = [];
  for (const input of toolInputs) toolResults.push(await files.memoryTool(home, input));
  const chunkHits = await files.retrieve({ text: "espresso descaled", scope: home });
  await files.ingest({ text: "coffee black", scope: home, pinned: true });
  const hotDocument = await files.renderHotFile(home, "# Me\n");
  const hotInput = { scope: home, path: "USER.md", document: hotDocument.replace("coffee black", "coffee white") };
  const hotSync = await files.readHotFile(hotInput);
  const removed = await files.removeFile(fileRef);

  // Keys, metadata and history.
  const keyedInput = { text: "Tea: green.", scope: home, key: "drink", metadata: { from: "settings", n: 1, deep: { a: [1, "x", null, true] } } };
  const upserted = [...await mem.upsert(keyedInput), ...await mem.upsert([{ ...keyedInput, text: "Tea: black." }])];
  const byKey = await mem.getByKey({ scope: home, key: "drink" });
  await mem.update(upserted[0].id, { pinned: true, status: "pending", metadata: { from: "settings", n: 2 } });
  const history = await mem.history(upserted[0].id);
  const metaQuery = { text: "tea", scope: home, metadata: { from: "settings" }, explain: true, includePending: true };
  const metaHits = await mem.retrieve(metaQuery);
  const metaList = await mem.list({ scope: { userId: "alice", metadata: { n: 2 } } });
  assert.ok(upserted[1].outcome === "replaced" && byKey?.metadata && history.length === 5 && metaHits.length === 1 && metaList.items.length === 1);

  // Supersession and extraction.
  const supersedingInput = { ...keyedInput, text: "Tea: oolong.", supersede: true };
  const superseding = await mem.upsert(supersedingInput);
  const supersededItems = [await mem.get(upserted[0].id), await mem.get(superseding[0].id)];
  const supersededHistory = await mem.history(upserted[0].id);
  const operations = [
    { op: "add", text: "Walks to work.", kind: "fact", tags: ["habits"], key: "commute", metadata: { from: "chat" } },
    { op: "update", id: superseding[0].id, text: "Tea: jasmine." },
    { op: "delete", id: ingested[2].id },
    { op: "none" },
  ];
  const remembered = await mem.remember([{ role: "user", content: "I drink jasmine tea, walk to work, and no longer buy oat milk." }], {
    scope: home, limit: 20, extractor: ({ memories }) => memories.length >= 0 ? operations : [],
  });
  assert.ok(superseding[0].outcome === "superseded" && supersededItems[0].supersededBy && remembered.superseded.length === 1);

  const deleted = await mem.deleteAll({ scope: { userId: "alice", workspaceId: "home" } });
  assert.ok(item.mergedFrom.length === 1 && hits[0].explain && hits[0].policy?.expiresAt && tight.dropped.length > 0);
  assert.ok(chunkHits[0].item.sourceLines && storedFiles[1] === null && toolResults.at(-1).isError && hotSync.updated.length === 1);

  const literal = (value) => JSON.stringify(value, null, 1);
  const source = `import type * as M from ${JSON.stringify(declarations.replace(/\.d\.ts$/, ".js"))};
const inputs: M.MemoryInput[] = ${literal(inputs)};
const ingested: M.IngestResult[] = ${literal(ingested)};
const query: M.RetrieveQuery = ${literal(query)};
const hits: M.RetrieveHit[] = ${literal(hits)};
const injectQuery: M.InjectQuery = ${literal(injectQuery)};
const injections: M.Injection[] = ${literal([injection, tight])};
const items: M.MemoryItem[] = ${literal([item, updated])};
const patch: M.MemoryPatch = ${literal(patch)};
const listQuery: M.ListQuery = ${literal(listQuery)};
const pages: M.ListPage[] = ${literal([page, next])};
const stats: M.Stats = ${literal(stats)};
const imported: Awaited<ReturnType<M.Memory["import"]>> = ${literal(imported)};
const deleted: Awaited<ReturnType<M.Memory["deleteAll"]>> = ${literal(deleted)};
const config: M.Config = ${literal(config)};
const fileInput: M.FileContent = ${literal(fileInput)};
const fileSyncs: M.FileSync[] = ${literal(fileSyncs)};
const fileRef: M.FileRef = ${literal(fileRef)};
const storedFiles: Awaited<ReturnType<M.Memory["file"]>>[] = ${literal(storedFiles)};
const toolInputs: M.MemoryToolCommand[] = ${literal(toolInputs)};
const toolResults: M.MemoryToolResult[] = ${literal(toolResults)};
const chunkHits: M.RetrieveHit[] = ${literal(chunkHits)};
const hotDocument: Awaited<ReturnType<M.Memory["renderHotFile"]>> = ${literal(hotDocument)};
const hotInput: M.HotFileDocument = ${literal(hotInput)};
const hotSync: M.HotFileSync = ${literal(hotSync)};
const removed: Awaited<ReturnType<M.Memory["removeFile"]>> = ${literal(removed)};
const keyedInput: M.MemoryInput = ${literal(keyedInput)};
const upserted: M.IngestResult[] = ${literal(upserted)};
const byKey: Awaited<ReturnType<M.Memory["getByKey"]>> = ${literal(byKey)};
const history: M.HistoryEvent[] = ${literal(history)};
const metaQuery: M.RetrieveQuery = ${literal(metaQuery)};
const metaHits: M.RetrieveHit[] = ${literal(metaHits)};
const metaList: M.ListPage = ${literal(metaList)};
const supersedingInput: M.MemoryInput = ${literal(supersedingInput)};
const superseding: M.IngestResult[] = ${literal(superseding)};
const supersededItems: M.MemoryItem[] = ${literal(supersededItems)};
const supersededHistory: M.HistoryEvent[] = ${literal(supersededHistory)};
const operations: M.MemoryOperation[] = ${literal(operations)};
const remembered: M.RememberResult = ${literal(remembered)};
// Where the WebAssembly module may come from (\`init\` and \`Memory.open\`).
const wasmOptions: M.OpenOptions[] = [
  { wasm: "/memtide_bg.wasm" }, { wasm: new URL("https://cdn.example/memtide_bg.wasm") },
  { wasm: new Uint8Array(8) }, { wasm: fetch("/memtide_bg.wasm") }, { wasm: new WebAssembly.Module(new Uint8Array(8)) },
];
const init: typeof M.init = async (options?: M.InitOptions) => { void options; };
export {
  wasmOptions, init,
  inputs, ingested, query, hits, injectQuery, injections, items, patch, listQuery, pages, stats, imported, deleted,
  config, fileInput, fileSyncs, fileRef, storedFiles, toolInputs, toolResults, chunkHits, hotDocument, hotInput, hotSync, removed,
  keyedInput, upserted, byKey, history, metaQuery, metaHits, metaList,
  supersedingInput, superseding, supersededItems, supersededHistory, operations, remembered,
};
`;
  assert.deepEqual(await typeErrors("check.ts", source), []);
});

test("the adapters' declarations (memtide/fs, cloudflare-kv, deno-kv, durable-object) satisfy StorageAdapter", async () => {
  const adapters = (name) => JSON.stringify(fileURLToPath(new URL(`../../pkg-template/adapters/${name}.js`, import.meta.url)));
  const source = `import type { OpenOptions, StorageAdapter } from ${JSON.stringify(declarations.replace(/\.d\.ts$/, ".js"))};
import { FsStorage } from ${adapters("fs")};
import { CloudflareKvStorage, type KvNamespaceLike } from ${adapters("cloudflare-kv")};
import { DenoKvStorage } from ${adapters("deno-kv")};
import { DurableObjectSqlStorage, PART_BYTES, type SqliteDurableObjectStorageLike } from ${adapters("durable-object")};
declare const kv: KvNamespaceLike;
declare const storage: SqliteDurableObjectStorageLike;
const all: StorageAdapter[] = [
  new FsStorage("/tmp/memtide"), new CloudflareKvStorage(kv, { prefix: "u1/" }), new DenoKvStorage({}, ["memtide", "u1"]),
  new DurableObjectSqlStorage(storage, { table: "memories" }),
];
const options: OpenOptions[] = all.map((storage) => ({ storage }));
const part: number = PART_BYTES;
export { options, part };
`;
  assert.deepEqual(await typeErrors("adapters.ts", source), []);
});

test("memtide/worker's and memtide/model's declarations type a page's use of them", async () => {
  const pkg = (name) => JSON.stringify(fileURLToPath(new URL(`../../pkg-template/${name}.js`, import.meta.url)));
  const source = `import type { IngestResult, MemtideError, Progress } from ${pkg("index")};
import { WorkerMemory, serve } from ${pkg("worker")};
import { fetchModel, modelFiles, type FetchProgress } from ${pkg("model")};
export async function page(worker: SharedWorker | Worker, signal: AbortSignal): Promise<number> {
  const mem = await WorkerMemory.open(worker, {
    name: "notes", storage: "indexeddb", model: { baseUrl: "/models/minilm/" },
    onChange: () => {}, onProgress: (p) => { p.stage; },
  });
  const seen: Progress[] = [];
  const results: IngestResult[] = await mem.ingest([{ text: "x", scope: { userId: "u", workspaceId: "w" } }], {
    signal, onProgress: (p) => seen.push(p),
  });
  const embedded: number = await mem.setModel({ onnxUrl: "/m.onnx", tokenizerUrl: "/t.json" }, {
    onDownload: (d: FetchProgress) => d.loaded,
  });
  const bytes: number = await mem.wasmMemoryBytes();
  await mem.close();
  const files = await fetchModel({ baseUrl: "/models/minilm/", onnxSha256: modelFiles.onnx.sha256, tokenizerSha256: null, signal });
  const code: MemtideError["code"] = "ABORTED";
  const gone: MemtideError["code"] = "WORKER_GONE";
  return results.length + embedded + bytes + files.onnx.length + code.length + gone.length;
}
export function script(): void { serve(); }
`;
  assert.deepEqual(await typeErrors("worker.ts", source), []);
});

test("memtide/lexical's declarations are memtide's", async () => {
  const lexical = JSON.stringify(fileURLToPath(new URL("../../pkg-template/lexical.js", import.meta.url)));
  const source = `import { Memory, MemtideError, init, wasmMemoryBytes, type RetrieveHit } from ${lexical};
export async function worker(wasm: WebAssembly.Module): Promise<number> {
  await init({ wasm });
  const mem = await Memory.open();
  const hits: RetrieveHit[] = await mem.retrieve({ text: "x", scope: { userId: "u", workspaceId: "w" } });
  const code: MemtideError["code"] = "MODEL";
  await mem.close();
  return hits.length + code.length + wasmMemoryBytes();
}
`;
  assert.deepEqual(await typeErrors("lexical.ts", source), []);
});
