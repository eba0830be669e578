// The Next.js app (tests/apps/next) built by `next build` and served by
// `next start`: an app-router page that keeps a memory in IndexedDB across a
// reload, and route handlers in the edge and Node.js runtimes (one of them
// on `memtide/lexical`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { remembered, run, start, text, visitTwice } from "./lib.mjs";

const cwd = new URL("next/", import.meta.url);
const next = fileURLToPath(new URL("node_modules/.bin/next", import.meta.url));
const env = { NEXT_TELEMETRY_DISABLED: "1" };

test("`next build` makes a working app: a client page, an edge route and a Node.js route", async (t) => {
  await run(next, ["build"], { cwd, env });
  // What a deployment uploads with the edge function: each .wasm (the core
  // and the model's), once.
  const manifest = JSON.parse(await readFile(new URL(".next/server/middleware-manifest.json", cwd), "utf8"));
  const wasm = manifest.functions["/api/memory/route"].wasm.map((w) => w.filePath).sort();
  assert.equal(wasm.length, 2, `${wasm}`);
  assert.match(wasm[0], /memtide_bg.*\.wasm$/);
  assert.match(wasm[1], /memtide_model_bg.*\.wasm$/);
  // The edge route on `memtide/lexical` uploads the core's only.
  const lexicalWasm = manifest.functions["/api/lexical/route"].wasm.map((w) => w.filePath);
  assert.equal(lexicalWasm.length, 1, `${lexicalWasm}`);
  assert.match(lexicalWasm[0], /memtide_bg.*\.wasm$/);
  const server = await start(next, ["start", "--hostname", "127.0.0.1", "--port", "0"], /Local:\s+(http:\/\/\S+)/, { cwd, env });
  t.after(() => server.stop());
  const url = server.match[1].replace(/\/?$/, "/");

  for (const route of ["api/memory", "api/node"]) {
    const response = await fetch(new URL(route, url));
    const body = await response.text();
    assert.equal(response.status, 200, `${route}: ${body}\n${server.output()}`);
    assert.deepEqual(JSON.parse(body).hits, [text], route);
    assert.equal(JSON.parse(body).modelModule, "INVALID_INPUT", `${route}: the model's module starts`);
  }

  const lexical = await fetch(new URL("api/lexical", url));
  const seen = JSON.parse(await lexical.text());
  assert.equal(lexical.status, 200, JSON.stringify(seen));
  assert.deepEqual(seen.hits, [text]);
  assert.equal(seen.retrievalMode, "lexical");
  assert.equal(seen.model.code, "MODEL");
  assert.match(seen.model.message, /memtide\/lexical.*imports `memtide`/);

  assert.deepEqual(await visitTwice(url), remembered);
});
