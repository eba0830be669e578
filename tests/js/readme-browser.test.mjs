// The browser examples of the npm package's README (pkg-template/README.md)
// run in headless Chromium against the built package: each ```js browser
// block becomes a module of a page whose import map resolves "memtide",
// "memtide/model" and "memtide/worker" to dist/memtide, with console.assert
// made to throw. A ```js browser-worker <name> block is the script of a
// worker the examples start (`new URL("./<name>", import.meta.url)`),
// served with its imports resolved, as import maps do not reach workers.
// The model files are served at /models/minilm/, as the README hosts them.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { servePackage } from "./chromium.mjs";

const root = new URL("../../", import.meta.url);
const modelDir = process.env.MEMTIDE_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { encoding: "utf8" }).trim().split("\n").pop();
const readme = await readFile(new URL("pkg-template/README.md", root), "utf8");
const blocks = [...readme.matchAll(/```js browser\n([\s\S]*?)```/g)].map((m) => m[1]);
const workers = new Map([...readme.matchAll(/```js browser-worker ([\w.-]+)\n([\s\S]*?)```/g)]
  .map((m) => [m[1], m[2].replace(/from "memtide(\/[a-z-]+)?"/g, (_, sub) => `from "/dist/memtide${sub ?? "/browser"}.js"`)]));
const imports = { memtide: "/dist/memtide/browser.js", "memtide/model": "/dist/memtide/model.js", "memtide/worker": "/dist/memtide/worker.js" };
const page = `<!doctype html><meta charset="utf-8"><title>loading</title>
<script type="importmap">${JSON.stringify({ imports })}</script>
<script type="module">
  console.assert = (condition, ...message) => { if (!condition) throw new Error("console.assert failed: " + message.join(" ")); };
  document.title = "ready";
</script>`;

let site;
let base;
let browser;

before(async () => {
  site = await servePackage(async (path) => {
    if (path === "/") return page;
    if (/^\/example\/\d+\.js$/.test(path)) return blocks[Number(path.match(/\d+/)[0])];
    if (path.startsWith("/example/") && workers.has(path.slice(9))) return workers.get(path.slice(9));
    if (path.startsWith("/models/minilm/")) return readFile(`${modelDir}/${path.slice(15)}`);
    return undefined;
  });
  ({ base, browser } = site);
});

after(() => site?.close());

test("the package README has browser examples", () => {
  assert.ok(blocks.length > 0);
});

blocks.forEach((_, i) => {
  test(`pkg-template/README.md browser example ${i + 1} runs in Chromium`, async () => {
    const context = await browser.newContext();
    const tab = await context.newPage();
    await tab.goto(base);
    await tab.waitForFunction(() => document.title === "ready");
    const error = await tab.evaluate(async (n) => {
      try {
        await import(`/example/${n}.js`);
        return null;
      } catch (e) {
        return String(e?.stack ?? e);
      }
    }, i);
    assert.equal(error, null);
    await context.close();
  });
});
