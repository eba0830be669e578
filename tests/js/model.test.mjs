// Node tests of `memtide/model`'s fetchModel: progress, caching, errors, and
// the fetched files loading into a store. A local HTTP server serves the
// model files; a Map-backed object with the Cache API's `open/match/put`
// stands in for `caches`, which Node lacks.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";

import { createHash } from "node:crypto";

import { fetchModel, modelFiles } from "../../dist/memtide/model.js";
import { Memory } from "../../dist/memtide/node.js";

const modelDir = process.env.MEMTIDE_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { encoding: "utf8" }).trim().split("\n").pop();
const files = {
  "/model.onnx": await readFile(`${modelDir}/model.onnx`),
  "/tokenizer.json": await readFile(`${modelDir}/tokenizer.json`),
};

function serve() {
  const requests = [];
  const server = createServer((req, res) => {
    requests.push(req.url);
    const body = files[req.url];
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-length": body.length });
    res.end(body);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => {
    const base = `http://127.0.0.1:${server.address().port}`;
    resolve({ base, requests, close: () => new Promise((done) => server.close(done)) });
  }));
}

function memoryCaches() {
  const stores = new Map();
  return {
    async open(name) {
      if (!stores.has(name)) {
        const entries = new Map();
        stores.set(name, {
          async match(url) {
            const bytes = entries.get(url);
            return bytes ? new Response(bytes, { headers: { "content-length": String(bytes.length) } }) : undefined;
          },
          async put(url, response) {
            entries.set(url, new Uint8Array(await response.arrayBuffer()));
          },
          async delete(url) {
            return entries.delete(url);
          },
          entries,
        });
      }
      return stores.get(name);
    },
  };
}

test("fetchModel reports progress, caches, and the files load", async () => {
  const server = await serve();
  try {
    const caches = memoryCaches();
    const progress = [];
    const options = {
      onnxUrl: `${server.base}/model.onnx`,
      tokenizerUrl: `${server.base}/tokenizer.json`,
      caches,
      onProgress: (p) => progress.push(p),
    };
    const first = await fetchModel(options);
    assert.equal(first.fromCache, false);
    assert.deepEqual(Buffer.from(first.onnx), files["/model.onnx"]);
    assert.equal(first.tokenizer, files["/tokenizer.json"].toString("utf8"));
    const last = progress.filter((p) => p.url.endsWith("model.onnx")).at(-1);
    assert.equal(last.loaded, files["/model.onnx"].length);
    assert.equal(last.total, files["/model.onnx"].length);
    assert.ok(progress.length > 2, "several progress events for a 23 MB file");
    assert.equal(server.requests.length, 2);

    const second = await fetchModel(options);
    assert.equal(second.fromCache, true);
    assert.equal(server.requests.length, 2, "the second load does not touch the network");
    assert.deepEqual(second.onnx, first.onnx);

    const mem = await Memory.open({ model: second });
    assert.equal((await mem.stats()).retrievalMode, "hybrid");

    await assert.rejects(
      fetchModel({ ...options, onnxUrl: `${server.base}/missing.onnx`, caches: undefined }),
      (e) => e.code === "MODEL" && /404/.test(e.message),
    );
    await assert.rejects(fetchModel({ onnxUrl: options.onnxUrl }), (e) => e.code === "INVALID_INPUT");
  } finally {
    await server.close();
  }
});

test("modelFiles names the files scripts/fetch-model.sh pins, with their sizes", async () => {
  const script = await readFile(new URL("../../scripts/fetch-model.sh", import.meta.url), "utf8");
  for (const [key, variable] of [["onnx", "MODEL_SHA256"], ["tokenizer", "TOKENIZER_SHA256"]]) {
    const file = modelFiles[key];
    assert.ok(script.includes(`${variable}=${file.sha256}`), `${file.name}'s sha256 is the pinned one`);
    const bytes = files[`/${file.name}`];
    assert.equal(bytes.length, file.bytes);
    assert.equal(createHash("sha256").update(bytes).digest("hex"), file.sha256);
  }
});

test("fetchModel evicts a cached copy whose sha256 is wrong and fetches the file again", async () => {
  const server = await serve();
  try {
    const caches = memoryCaches();
    const options = { baseUrl: `${server.base}/`, caches };
    await fetchModel(options);
    assert.equal(server.requests.length, 2);
    const cache = await caches.open("mnemo-model-v1");
    const onnxUrl = `${server.base}/model.onnx`;
    const corrupt = cache.entries.get(onnxUrl);
    corrupt[1000] ^= 0xff;

    const again = await fetchModel(options);
    assert.equal(again.fromCache, false);
    assert.deepEqual(server.requests, ["/model.onnx", "/tokenizer.json", "/model.onnx"]);
    assert.deepEqual(Buffer.from(again.onnx), files["/model.onnx"]);
    assert.deepEqual(Buffer.from(cache.entries.get(onnxUrl)), files["/model.onnx"], "the good copy replaced it");

    const third = await fetchModel(options);
    assert.equal(third.fromCache, true);
    assert.equal(server.requests.length, 3);
  } finally {
    await server.close();
  }
});

test("fetchModel refuses a served file with the wrong sha256 and caches nothing", async () => {
  const server = await serve();
  try {
    const caches = memoryCaches();
    const wrong = "0".repeat(64);
    await assert.rejects(
      fetchModel({ baseUrl: server.base, caches, tokenizerSha256: wrong }),
      (e) => e.code === "MODEL" && e.message.includes(`expected ${wrong}`),
    );
    const cache = await caches.open("mnemo-model-v1");
    assert.equal(await cache.match(`${server.base}/tokenizer.json`), undefined);
    // null skips the check (a model of your own).
    const unchecked = await fetchModel({ baseUrl: server.base, caches: undefined, tokenizerSha256: null });
    assert.equal(unchecked.tokenizer, files["/tokenizer.json"].toString("utf8"));
    await assert.rejects(fetchModel({ baseUrl: server.base, onnxSha256: "abc" }), (e) => e.code === "INVALID_INPUT");
  } finally {
    await server.close();
  }
});

test("fetchModel stops with ABORTED when its signal fires", async () => {
  const server = await serve();
  try {
    const controller = new AbortController();
    const fetching = fetchModel({
      baseUrl: server.base,
      caches: undefined,
      signal: controller.signal,
      onProgress: ({ loaded }) => { if (loaded > 0) controller.abort(); },
    });
    await assert.rejects(fetching, (e) => e.code === "ABORTED");
  } finally {
    await server.close();
  }
});
