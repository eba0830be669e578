// The Worker (tests/apps/wrangler) bundled by `wrangler deploy --dry-run`,
// which writes what it would upload, run in workerd through miniflare.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { run, text } from "./lib.mjs";

const env = { WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_LOG: "warn" };

test("the bundle `wrangler deploy` would upload works in workerd", async (t) => {
  const outdir = await mkdtemp(join(tmpdir(), "memtide-wrangler-"));
  t.after(() => rm(outdir, { recursive: true, force: true }));
  const wrangler = fileURLToPath(new URL("node_modules/.bin/wrangler", import.meta.url));
  await run(wrangler, ["deploy", "--dry-run", "--outdir", outdir], { cwd: new URL("wrangler/", import.meta.url), env });
  const files = await readdir(outdir);
  // Both modules are uploaded (compiled at upload); the model's is
  // instantiated only when a model is given.
  assert.ok(files.some((f) => /memtide_bg.*\.wasm$/.test(f)), `the core's .wasm is uploaded as a module: ${files}`);
  assert.ok(files.some((f) => /memtide_model_bg.*\.wasm$/.test(f)), `the model's .wasm is uploaded as a module: ${files}`);

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
  const seen = JSON.parse(body);
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
