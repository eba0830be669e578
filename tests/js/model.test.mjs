// Node tests of `memtide/model`'s fetchModel: progress, caching, errors, and
// the fetched files loading into a store. A local HTTP server serves the
// model files; a Map-backed object with the Cache API's `open/match/put`
// stands in for `caches`, which Node lacks.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";

import { fetchModel } from "../../dist/memtide/model.js";
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
