// A Deno program (tests/apps/deno) importing the package through an `npm:`
// specifier, with Deno 2 from the npm registry (the repository's
// devDependencies), resolved from the installed tarball.
import { test } from "node:test";
import assert from "node:assert/strict";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { run, text } from "./lib.mjs";

const deno = fileURLToPath(new URL("../../node_modules/.bin/deno", import.meta.url));
const env = { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", DENO_DIR: process.env.DENO_DIR ?? join(homedir(), ".cache/memtide/deno") };

test("a Deno program opens, ingests, retrieves and closes", async () => {
  const { stdout } = await run(deno, ["run", "--allow-read", "main.js"], { cwd: new URL("deno/", import.meta.url), env });
  assert.deepEqual(JSON.parse(stdout).hits, [text]);
  assert.equal(JSON.parse(stdout).modelModule, "INVALID_INPUT", "the model's module starts when a model is given");
});
