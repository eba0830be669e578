// The Workers (tests/apps/wrangler, tests/apps/wrangler-lexical) bundled by
// `wrangler deploy --dry-run`, which writes what it would upload, run in
// workerd through miniflare.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { run, text } from "./lib.mjs";

const env = { WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_LOG: "warn" };

/** Builds the app in `dir` with `wrangler deploy --dry-run`; answers the uploaded files and the Worker's JSON answer. */
async function buildAndFetch(t, dir) {
  const outdir = await mkdtemp(join(tmpdir(), "memtide-wrangler-"));
  t.after(() => rm(outdir, { recursive: true, force: true }));
  const wrangler = fileURLToPath(new URL("node_modules/.bin/wrangler", import.meta.url));
  await run(wrangler, ["deploy", "--dry-run", "--outdir", outdir], { cwd: new URL(`${dir}/`, import.meta.url), env });
  const files = await readdir(outdir);
  const wasmBytes = (await Promise.all(files.filter((f) => f.endsWith(".wasm")).map((f) => stat(join(outdir, f)))))
    .reduce((n, s) => n + s.size, 0);
  // The module types Wrangler declares for what it uploads.
  const mf = new Miniflare({
    modules: true,
    scriptPath: join(outdir, "index.js"),
    modulesRoot: outdir,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2026-04-01",
    host: "127.0.0.1",
    cf: false,
  });
  t.after(() => mf.dispose());
  const response = await mf.dispatchFetch("http://127.0.0.1/");
  const body = await response.text();
  assert.equal(response.status, 200, body);
  return { files, wasmBytes, seen: JSON.parse(body) };
}

test("the bundle `wrangler deploy` would upload works in workerd", async (t) => {
  const { files, seen } = await buildAndFetch(t, "wrangler");
  // Both modules are uploaded (compiled at upload); the model's is
  // instantiated only when a model is given.
  assert.ok(files.some((f) => /memtide_bg.*\.wasm$/.test(f)), `the core's .wasm is uploaded as a module: ${files}`);
  assert.ok(files.some((f) => /memtide_model_bg.*\.wasm$/.test(f)), `the model's .wasm is uploaded as a module: ${files}`);
  assert.deepEqual(seen.hits, [text]);
  // Curation in workerd: the changed preference supersedes the old one,
  // which leaves retrieval but stays in history; the summary covers the live memories.
  const [[cortado], [flatWhite]] = seen.added;
  assert.deepEqual(seen.superseded, [{ id: cortado, by: flatWhite }]);
  assert.deepEqual(seen.coffee, ["Takes their coffee as a flat white"]);
  assert.deepEqual(seen.history, [["created", null], ["superseded", flatWhite]]);
  assert.equal(seen.summary.kind, "summary");
  assert.equal(seen.summary.sources, 2);
  assert.doesNotMatch(seen.summary.text, /cortado/);
  assert.equal(seen.modelModule, "INVALID_INPUT", "the model's module starts in workerd");
});

test("a Worker on `memtide/lexical` uploads the core's module only, and answers in workerd", async (t) => {
  const { files, wasmBytes, seen } = await buildAndFetch(t, "wrangler-lexical");
  const wasm = files.filter((f) => f.endsWith(".wasm"));
  assert.equal(wasm.length, 1, `one .wasm module: ${files}`);
  assert.match(wasm[0], /memtide_bg.*\.wasm$/, "the core's");
  assert.ok(!files.some((f) => /model/.test(f) && f.endsWith(".wasm")), `no model module: ${files}`);
  console.log(`memtide/lexical: ${files.length} files uploaded, ${(wasmBytes / 2 ** 20).toFixed(2)} MiB of .wasm`);
  assert.equal(seen.hits[0], text);
  assert.equal(seen.retrievalMode, "lexical");
  assert.equal(seen.items, 3);
  assert.equal(seen.added, 1);
  // A model needs the module this entry leaves out: a MODEL error that says what to do.
  assert.equal(seen.model.code, "MODEL");
  assert.match(seen.model.message, /memtide\/lexical.*imports `memtide`/);
  assert.ok(seen.bytes > 0, "the core started");
});
