// The Vite app (tests/apps/vite) in Chromium, served by the dev server and
// built by the default `vite build`: both store a memory in IndexedDB and
// find it again after a reload; its second page (worker.html) does the same
// with the store in a worker through `memtide/worker`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build, createServer, preview } from "vite";
import { remembered, visitTwice } from "./lib.mjs";

const root = fileURLToPath(new URL("vite/", import.meta.url));

// Each run in fresh directories: a new project's first `vite`, with no
// dependencies pre-bundled from an earlier build of the package.
async function scratch(t) {
  const dir = await mkdtemp(join(tmpdir(), "memtide-vite-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return { cacheDir: join(dir, "cache"), outDir: join(dir, "dist") };
}

test("the Vite dev server serves a working app", async (t) => {
  const { cacheDir } = await scratch(t);
  const server = await createServer({ root, cacheDir, logLevel: "warn", server: { host: "127.0.0.1", port: 0 } });
  t.after(() => server.close());
  await server.listen();
  assert.deepEqual(await visitTwice(server.resolvedUrls.local[0]), remembered);
});

test("`vite build` makes a working app, which can be told where the .wasm is", async (t) => {
  const { cacheDir, outDir } = await scratch(t);
  await build({ root, cacheDir, logLevel: "warn", build: { outDir, emptyOutDir: true } });
  const server = await preview({ root, cacheDir, logLevel: "warn", build: { outDir }, preview: { host: "127.0.0.1", port: 0 } });
  t.after(() => server.close());
  const url = server.resolvedUrls.local[0];
  assert.deepEqual(await visitTwice(url), remembered);

  // Moved out of the bundle's assets, the .wasm is found through `wasm` only.
  const wasmAssets = (await readdir(join(outDir, "assets"))).filter((f) => f.endsWith(".wasm"));
  assert.equal(wasmAssets.length, 2, `the core's .wasm and the model's: ${wasmAssets}`);
  const [asset] = wasmAssets.filter((f) => f.startsWith("memtide_bg"));
  await mkdir(join(outDir, "elsewhere"));
  await rename(join(outDir, "assets", asset), join(outDir, "elsewhere", "memtide.wasm"));
  assert.deepEqual(await visitTwice(`${url}?wasm=/elsewhere/memtide.wasm`), remembered);
});

test("the store in a worker (memtide/worker) works from the dev server and from `vite build`", async (t) => {
  const { cacheDir, outDir } = await scratch(t);
  const dev = await createServer({ root, cacheDir, logLevel: "warn", server: { host: "127.0.0.1", port: 0 } });
  t.after(() => dev.close());
  await dev.listen();
  assert.deepEqual(await visitTwice(new URL("worker.html", dev.resolvedUrls.local[0]).href), remembered);

  const input = { main: join(root, "index.html"), worker: join(root, "worker.html") };
  await build({ root, cacheDir, logLevel: "warn", build: { outDir, emptyOutDir: true, rollupOptions: { input } } });
  const server = await preview({ root, cacheDir, logLevel: "warn", build: { outDir }, preview: { host: "127.0.0.1", port: 0 } });
  t.after(() => server.close());
  assert.deepEqual(await visitTwice(new URL("worker.html", server.resolvedUrls.local[0]).href), remembered);
});
