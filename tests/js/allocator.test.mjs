// The WebAssembly modules' allocators in Node (the built package): what a
// store frees is reused, so filling and erasing a store again and again,
// opening it again and again, or embedding batch after batch, does not
// grow linear memory past the first cycle (tests/js/allocator.mjs;
// browser.test.mjs runs the first in Chromium). The core's allocator is
// the standard library's; the model's module has its own
// (crates/js-model/src/alloc.rs). Run: node --test tests/js/allocator.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";

import { Memory, wasmMemoryBytes } from "../../dist/memtide/node.js";
import { churn, embedChurn } from "./allocator.mjs";

const modelDir = process.env.MEMTIDE_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { encoding: "utf8" }).trim().split("\n").pop();

const MIB = 2 ** 20;

test("freed memory is reused: refilling and reopening a store do not grow wasm memory", async () => {
  const { afterFill, afterOpen, items, hits } = await churn({ Memory, wasmMemoryBytes });
  assert.ok(items.every((n) => n > 800), `the store held ${items} memories after each fill`);
  assert.ok(hits > 0, "the reopened store answers");
  // The first round grows the heap to its working size; the later ones,
  // doing the same work, must find it again in what the first freed.
  const [, second] = afterFill;
  assert.ok(afterFill.at(-1) <= second + MIB, `fills grew memory: ${afterFill.map((b) => (b / MIB).toFixed(2))} MiB`);
  assert.ok(afterOpen.at(-1) <= afterOpen[0] + MIB, `opens grew memory: ${afterOpen.map((b) => (b / MIB).toFixed(2))} MiB`);
});

test("the model's module reuses what each embedding batch frees", async () => {
  const model = {
    onnx: await readFile(`${modelDir}/model.onnx`),
    tokenizer: await readFile(`${modelDir}/tokenizer.json`, "utf8"),
  };
  const { afterBatch, embedded, items } = await embedChurn({ Memory, wasmMemoryBytes, model });
  // The semantic near-duplicate gate merges most of these alike texts;
  // every one was embedded before it was compared.
  assert.ok(embedded > 0 && embedded === items, `${embedded} of ${items} memories embedded`);
  assert.ok(afterBatch.at(-1) <= afterBatch[0] + MIB, `batches grew memory: ${afterBatch.map((b) => (b / MIB).toFixed(2))} MiB`);
});
