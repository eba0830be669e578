// memtide's framework integrations in Chromium: the Vite app
// tests/apps/integrations bundles the packed memtide (scripts/pack-apps.sh)
// with the Vercel AI SDK and LangGraph.js from npm (tests/apps/package.json)
// in one `vite build`, and runs in headless Chromium the scenarios the Node
// tests run (ai-sdk/scenario.mjs, langgraph/scenario.mjs), over IndexedDB;
// the same judges (ai-sdk/judge.mjs, langgraph/judge.mjs) check what each
// observed.
// Run: bash scripts/pack-apps.sh && node --test tests/apps/integrations.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build, preview } from "vite";
import { visit } from "./lib.mjs";
import { judgeConversation } from "./ai-sdk/judge.mjs";
import { judgeGraph } from "./langgraph/judge.mjs";

const root = fileURLToPath(new URL("integrations/", import.meta.url));
const version = async (name) =>
  JSON.parse(await readFile(new URL(`node_modules/${name}/package.json`, import.meta.url), "utf8")).version;

test("in Chromium, the AI SDK middleware and the LangGraph store work as in Node", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "memtide-integrations-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const outDir = join(dir, "dist");
  // One bundle holds the AI SDK, LangGraph and memtide: larger than Vite's
  // 500 kB warning, which says nothing here.
  await build({ root, cacheDir: join(dir, "cache"), logLevel: "warn", build: { outDir, emptyOutDir: true, chunkSizeWarningLimit: 5000 } });
  const server = await preview({ root, cacheDir: join(dir, "cache"), logLevel: "warn", build: { outDir }, preview: { host: "127.0.0.1", port: 0 } });
  t.after(() => server.close());

  const [seen] = await visit(server.resolvedUrls.local[0], 1);
  t.diagnostic(`ai ${await version("ai")}, @langchain/langgraph ${await version("@langchain/langgraph")}, memtide ${await version("memtide")}`);
  judgeConversation(seen.aiSdk);
  judgeGraph(seen.langgraph);
  // The graph's memories were in IndexedDB, the browser's default storage.
  assert.ok(seen.databases.includes(seen.graphDb), JSON.stringify(seen.databases));
});

test("the packed package names what its integrations import, and the AI SDK its middleware is for, as optional peers", async () => {
  const dir = new URL("node_modules/memtide/", import.meta.url);
  const manifest = JSON.parse(await readFile(new URL("package.json", dir), "utf8"));
  const files = (await readdir(dir, { recursive: true })).filter((f) => f.endsWith(".js") && !f.startsWith("wasm/"));
  const imported = new Set();
  for (const file of files) {
    for (const [, name] of (await readFile(new URL(file, dir), "utf8")).matchAll(/\bfrom "([^".][^"]*)"/g)) {
      if (!name.startsWith("node:")) imported.add(name);
    }
  }
  assert.ok(imported.has("@langchain/langgraph-checkpoint"), [...imported].join());
  for (const name of [...imported, "ai"]) {
    assert.ok(manifest.peerDependencies?.[name], `${name} is a peer dependency`);
    assert.equal(manifest.peerDependenciesMeta?.[name]?.optional, true, `${name} is optional`);
  }
  assert.equal(manifest.peerDependencies.ai, "^6.0.0", "the middleware implements AI SDK 6's specification v3");
});
