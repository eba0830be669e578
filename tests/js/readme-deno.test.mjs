// The Deno examples of the npm package's README (```js deno blocks of
// pkg-template/README.md) run in Deno (the binary of the root
// node_modules) against the built package: `npm:memtide` and its subpaths
// become the files of dist/memtide the package's exports name for Deno,
// console.assert is made to throw, and each runs in a directory of its own
// with read, write and env permissions and Deno KV.
import { test } from "node:test";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const root = new URL("../../", import.meta.url);
const deno = fileURLToPath(new URL("node_modules/.bin/deno", root));
const env = { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1",
  DENO_DIR: process.env.DENO_DIR ?? join(homedir(), ".cache/memtide/deno") };
const { exports } = JSON.parse(await readFile(new URL("pkg-template/package.json", root), "utf8"));
const target = (entry) => typeof entry === "string" ? entry : entry.deno ?? entry.default;
const resolve = (name) => new URL(`dist/memtide/${target(exports[name === "" ? "." : `./${name}`])}`, root).href;
const readme = await readFile(new URL("pkg-template/README.md", root), "utf8");
const blocks = [...readme.matchAll(/```js deno\n([\s\S]*?)```/g)].map((m) => m[1]);
const prelude = `console.assert = (condition, ...message) => { if (!condition) throw new Error("console.assert failed: " + message.join(" ")); };\n`;

test("the package README has Deno examples", () => {
  if (blocks.length === 0) throw new Error("no ```js deno block in pkg-template/README.md");
});

blocks.forEach((code, i) => {
  test(`pkg-template/README.md Deno example ${i + 1} runs in Deno`, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), "memtide-readme-deno-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const resolved = code.replace(/from "npm:memtide(?:\/([a-z-]+))?"/g, (_, sub) => `from "${resolve(sub ?? "")}"`);
    await writeFile(join(dir, "example.js"), prelude + resolved);
    await promisify(execFile)(deno, ["run", "--allow-read", "--allow-write", "--allow-env", "--unstable-kv", "example.js"],
      { cwd: dir, env });
  });
});
