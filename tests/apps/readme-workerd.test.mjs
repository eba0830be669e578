// The npm package README's ```js workerd examples (pkg-template/README.md)
// run verbatim in workerd. Each becomes the module readme.js of a
// throwaway Worker project whose node_modules are the test apps' (where
// scripts/pack-apps.sh installs the packed tarball), beside an entry that
// uses it as a user would; `wrangler deploy --dry-run` bundles the project
// and miniflare runs the bundle with the KV namespace MEMORIES and the
// SQLite-backed Durable Object class UserMemory bound as USER_MEMORY.
//
// The examples only retrieve, so each entry adds a way to store what they
// must then find, through another store on the same storage:
// - memtide/cloudflare-kv: the Worker is the README's; `/seed` ingests.
// - memtide/durable-object: the bound class, exported as `UserMemory`,
//   extends the README's with `/seed`, which ingests, and `/restart`,
//   which resets the object (ctx.abort) so that the next request meets a
//   new instance opening the stored memories, as after an eviction (an
//   open store does not see another store's writes); the Worker routes
//   each user to an object as the README's comment says.
// A retrieve before the seed finds nothing, one after it finds the text. An
// example none of the harnesses fits fails the first test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { run, text } from "./lib.mjs";

const env = { WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_LOG: "warn" };
const wrangler = fileURLToPath(new URL("node_modules/.bin/wrangler", import.meta.url));
const readme = await readFile(new URL("../../pkg-template/README.md", import.meta.url), "utf8");
const blocks = [...readme.matchAll(/```js workerd\n([\s\S]*?)```/g)].map((m) => m[1]);

const scope = { userId: "u1", workspaceId: "readme" };
const query = { text: "who feeds the cat?", scope };

// The entry and configuration each example runs with, by what it exports
// (not by its imports, so that a wrong import fails in the bundle).
const harnesses = {
  "the Worker over Workers KV": {
    matches: (code) => /^export default \{/m.test(code),
    entry: `import { Memory } from "memtide";
import { CloudflareKvStorage } from "memtide/cloudflare-kv";
import worker from "./readme.js";

export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname !== "/seed") return worker.fetch(request, env);
    const mem = await Memory.open({ storage: new CloudflareKvStorage(env.MEMORIES) });
    await mem.ingest(await request.json());
    await mem.close();
    return new Response(null, { status: 204 });
  },
};
`,
    config: { kv_namespaces: [{ binding: "MEMORIES", id: "memories" }] },
    miniflare: { kvNamespaces: ["MEMORIES"] },
    restart: false,
  },
  "the Durable Object class UserMemory": {
    matches: (code) => /^export class UserMemory extends DurableObject\b/m.test(code),
    entry: `import { Memory } from "memtide";
import { DurableObjectSqlStorage } from "memtide/durable-object";
import { UserMemory as ReadmeUserMemory } from "./readme.js";

export class UserMemory extends ReadmeUserMemory {
  async fetch(request) {
    const { pathname } = new URL(request.url);
    if (pathname === "/restart") this.ctx.abort("restart");
    if (pathname !== "/seed") return super.fetch(request);
    const mem = await Memory.open({ storage: new DurableObjectSqlStorage(this.ctx.storage) });
    await mem.ingest(await request.json());
    await mem.close();
    return new Response(null, { status: 204 });
  }
}

export default {
  async fetch(request, env) {
    const userId = new URL(request.url).searchParams.get("user");
    const stub = env.USER_MEMORY.get(env.USER_MEMORY.idFromName(userId));
    try {
      return await stub.fetch(request);
    } catch (error) {
      return new Response(String(error), { status: 500 });
    }
  },
};
`,
    config: {
      durable_objects: { bindings: [{ name: "USER_MEMORY", class_name: "UserMemory" }] },
      migrations: [{ tag: "v1", new_sqlite_classes: ["UserMemory"] }],
    },
    miniflare: { durableObjects: { USER_MEMORY: { className: "UserMemory", useSQLite: true } } },
    restart: true,
  },
};

test("the package README has workerd examples, each with a harness", () => {
  assert.ok(blocks.length > 0, "no ```js workerd block in pkg-template/README.md");
  for (const code of blocks) assert.equal(harnessOf(code).length, 1, `one harness for:\n${code}`);
});

function harnessOf(code) {
  return Object.keys(harnesses).filter((name) => harnesses[name].matches(code));
}

blocks.forEach((code, i) => {
  const [name] = harnessOf(code);
  if (!name) return;
  test(`pkg-template/README.md workerd example ${i + 1} (${name}) runs in workerd`, async (t) => {
    const harness = harnesses[name];
    const dir = await mkdtemp(join(tmpdir(), "memtide-readme-workerd-"));
    let mf;
    t.after(async () => {
      await mf?.dispose();
      await rm(dir, { recursive: true, force: true });
    });
    await symlink(fileURLToPath(new URL("node_modules", import.meta.url)), join(dir, "node_modules"), "dir");
    await writeFile(join(dir, "readme.js"), code);
    await writeFile(join(dir, "index.js"), harness.entry);
    await writeFile(join(dir, "wrangler.json"), JSON.stringify({
      name: "memtide-readme-workerd", main: "index.js", compatibility_date: "2026-04-01", ...harness.config,
    }));
    const outdir = join(dir, "out");
    await run(wrangler, ["deploy", "--dry-run", "--outdir", outdir], { cwd: dir, env });

    mf = new Miniflare({
      modules: true,
      scriptPath: join(outdir, "index.js"),
      modulesRoot: outdir,
      modulesRules: [
        { type: "ESModule", include: ["**/*.js"] },
        { type: "CompiledWasm", include: ["**/*.wasm"] },
      ],
      ...harness.miniflare,
      compatibilityDate: "2026-04-01",
      host: "127.0.0.1",
      cf: false,
    });
    const post = async (path, body) => {
      const response = await mf.dispatchFetch(`http://127.0.0.1${path}?user=${scope.userId}`, { method: "POST", body: JSON.stringify(body) });
      return { status: response.status, body: await response.text() };
    };
    const retrieve = async () => {
      const { status, body } = await post("/", query);
      assert.equal(status, 200, body);
      return JSON.parse(body).map((hit) => hit.item.text);
    };

    assert.deepEqual(await retrieve(), [], "the store starts empty");
    const seeded = await post("/seed", { text, scope });
    assert.equal(seeded.status, 204, seeded.body);
    if (harness.restart) {
      const restarted = await post("/restart", {});
      assert.equal(restarted.status, 500, "ctx.abort fails the request that resets the object");
      assert.match(restarted.body, /\brestart\b/, restarted.body);
    }
    assert.deepEqual(await retrieve(), [text]);
  });
});
