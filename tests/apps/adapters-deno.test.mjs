// The storage conformance suite (tests/js/adapter-conformance.mjs) in Deno 2
// (npm `deno`, the repository's devDependencies) for `memtide/deno-kv`, the
// package resolved by name (`npm:memtide`) from the installed tarball: one
// Deno run (tests/apps/deno/adapters.js), one test per case.
import { test } from "node:test";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { run } from "./lib.mjs";

const deno = fileURLToPath(new URL("../../node_modules/.bin/deno", import.meta.url));
const env = { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", DENO_DIR: process.env.DENO_DIR ?? join(homedir(), ".cache/memtide/deno") };
const { stdout } = await run(deno, ["run", "--unstable-kv", "--allow-read", "--allow-write", "adapters.js"],
  { cwd: new URL("deno/", import.meta.url), env });

for (const { name, ok, error } of JSON.parse(stdout)) {
  test(`memtide/deno-kv in Deno: ${name}`, () => {
    if (!ok) throw new Error(error);
  });
}
