// The JavaScript examples of README.md, of the npm package's README and of
// the integration guides of docs/integrations/ run as tests against the
// built package: each ```js block becomes a module
// whose `from "memtide"` imports dist/memtide, `from "memtide/<subpath>"`
// the file the package's exports name (and `"memtide/wasm"` is its .wasm),
// with console.assert made to throw; MEMTIDE_MODEL_DIR is where the model
// is (scripts/fetch-model.sh's directory unless set). Blocks for another
// runtime are fenced with its name and not run here: ```js browser blocks
// run in Chromium (readme-browser.test.mjs), the package README's ```js deno
// blocks in Deno (readme-deno.test.mjs), its ```js workerd blocks verbatim
// in workerd, bundled by Wrangler from the packed tarball
// (tests/apps/readme-workerd.test.mjs, after scripts/pack-apps.sh).
import { test } from "node:test";
import { readFile, writeFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { execFileSync } from "node:child_process";

const root = new URL("../../", import.meta.url);
process.env.MEMTIDE_MODEL_DIR ??= execFileSync("bash", ["scripts/fetch-model.sh"], { encoding: "utf8" })
  .trim().split("\n").pop();
const entry = new URL("dist/memtide/node.js", root).href;
const wasm = new URL("dist/memtide/wasm/memtide_bg.wasm", root).href;
const { exports } = JSON.parse(await readFile(new URL("pkg-template/package.json", root), "utf8"));
const subpath = (name) => new URL(`dist/memtide/${exports[`./${name}`].default}`, root).href;

console.assert = (condition, ...message) => {
  if (!condition) throw new Error(`console.assert failed: ${message.join(" ")}`);
};

for (const readme of ["README.md", "pkg-template/README.md", "docs/integrations/anthropic.md"]) {
  const text = await readFile(new URL(readme, root), "utf8");
  const blocks = [...text.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
  test(`${readme} has JavaScript examples`, () => {
    if (blocks.length === 0) throw new Error(`no \`\`\`js block in ${readme}`);
  });
  blocks.forEach((code, i) => {
    test(`${readme} example ${i + 1} runs`, async () => {
      const dir = await mkdtemp(join(tmpdir(), "memtide-readme-"));
      const file = join(dir, "example.mjs");
      const resolved = code.replaceAll('from "memtide"', `from "${entry}"`).replaceAll('"memtide/wasm"', `"${wasm}"`)
        .replace(/from "memtide\/([a-z-]+)"/g, (_, name) => `from "${subpath(name)}"`);
      await writeFile(file, resolved);
      // The examples make their data directories under os.tmpdir(), as an
      // app would; pointing it into this example's directory removes them
      // with it (the tests of a file run one at a time).
      const tmp = process.env.TMPDIR;
      process.env.TMPDIR = dir;
      try {
        await import(pathToFileURL(file).href);
      } finally {
        if (tmp === undefined) delete process.env.TMPDIR;
        else process.env.TMPDIR = tmp;
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
}
