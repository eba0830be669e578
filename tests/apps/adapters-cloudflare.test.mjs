// The storage conformance suite (tests/js/adapter-conformance.mjs) in workerd
// through miniflare, for `memtide/cloudflare-kv` (a KV namespace) and
// `memtide/durable-object` (a SQLite-backed Durable Object class): the Worker
// tests/apps/cloudflare, which imports the package by name, bundled by
// `wrangler deploy --dry-run` from the installed tarball.
import { test, after } from "node:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { run } from "./lib.mjs";

const env = { WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_LOG: "warn" };
const outdir = await mkdtemp(join(tmpdir(), "memtide-adapters-cf-"));
const wrangler = fileURLToPath(new URL("node_modules/.bin/wrangler", import.meta.url));
await run(wrangler, ["deploy", "--dry-run", "--outdir", outdir], { cwd: new URL("cloudflare/", import.meta.url), env });

const mf = new Miniflare({
  modules: true,
  scriptPath: join(outdir, "index.js"),
  modulesRoot: outdir,
  modulesRules: [
    { type: "ESModule", include: ["**/*.js"] },
    { type: "CompiledWasm", include: ["**/*.wasm"] },
  ],
  kvNamespaces: ["KV"],
  durableObjects: { CONFORMANCE: { className: "ConformanceObject", useSQLite: true } },
  compatibilityDate: "2026-04-01",
  host: "127.0.0.1",
  cf: false,
});
after(async () => {
  await mf.dispose();
  await rm(outdir, { recursive: true, force: true });
});

for (const [adapter, label] of [["kv", "memtide/cloudflare-kv"], ["do", "memtide/durable-object"]]) {
  const names = await (await mf.dispatchFetch(`http://127.0.0.1/cases?adapter=${adapter}`)).json();
  names.forEach((name, i) => {
    test(`${label} in workerd: ${name}`, async () => {
      const response = await mf.dispatchFetch(`http://127.0.0.1/run?adapter=${adapter}&case=${i}`, { method: "POST" });
      const outcome = await response.json();
      if (!outcome.ok) throw new Error(outcome.error);
    });
  });
}
