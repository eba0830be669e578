// A Node ESM app and a CommonJS one, using the package installed from its
// tarball (scripts/pack-apps.sh) by name.
import { test } from "node:test";
import assert from "node:assert/strict";
import { run, text } from "./lib.mjs";

const cwd = new URL("node/", import.meta.url);
const app = async (how) => JSON.parse((await run("node", ["main.mjs", how], { cwd })).stdout);

test("a Node app opens, ingests, retrieves and closes; the module starts on the first open", async () => {
  const outcome = await app("default");
  assert.deepEqual(outcome.hits, [text]);
  assert.equal(outcome.modelModule, "INVALID_INPUT", "the model's module starts when a model is given");
  assert.equal(outcome.bytesBeforeOpen, 0, "nothing runs on import");
  assert.ok(outcome.bytesAfterOpen > 0);
});

test("`init({ wasm })` takes the module's bytes or a compiled WebAssembly.Module", async () => {
  for (const how of ["bytes", "module"]) {
    const outcome = await app(how);
    assert.deepEqual(outcome.hits, [text], how);
    assert.ok(outcome.bytesBeforeOpen > 0, `${how}: started by init`);
  }
});

test("a start that failed is retried by the next open", async () => {
  const outcome = await app("broken-first");
  assert.equal(outcome.broken, "CompileError");
  assert.deepEqual(outcome.hits, [text]);
});

test("require() is told the package is an ES module and how to import it", async () => {
  const failure = await run("node", ["main.cjs"], { cwd }).then(() => undefined, (e) => e);
  assert.ok(failure, "require succeeded");
  assert.match(failure.stderr, /memtide is an ES module.*await import\("memtide"\)/);
});
