// The webpack 5 app (tests/apps/webpack) built with its config and served as
// static files: it stores a memory in IndexedDB and finds it after a reload.
import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import webpack from "webpack";
import config from "./webpack/webpack.config.js";
import { remembered, serve, visitTwice } from "./lib.mjs";

test("webpack builds a working app", async (t) => {
  const stats = await new Promise((resolve, reject) => {
    webpack(config, (error, result) => (error ? reject(error) : resolve(result)));
  });
  assert.ok(!stats.hasErrors(), stats.toString("errors-only"));
  await copyFile(new URL("webpack/index.html", import.meta.url), new URL("webpack/dist/index.html", import.meta.url));
  const server = await serve(fileURLToPath(new URL("webpack/dist/", import.meta.url)));
  t.after(() => server.close());
  assert.deepEqual(await visitTwice(server.url), remembered);
});
