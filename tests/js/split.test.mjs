// The package's two WebAssembly modules (scripts/build-pkg.sh): the core
// (`wasm/memtide_bg.wasm`) and the model's (`wasm/memtide_model_bg.wasm`),
// which starts only when an app gives a model. Checks that a lexical-only
// app never loads the model's module, that the embeddings the model's
// module gives the core are bit for bit those of the single module before
// the split, and that its failures keep their codes. Run: node --test
// tests/js/split.test.mjs (after scripts/build-pkg.sh).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile, stat } from "node:fs/promises";
import { execFileSync } from "node:child_process";

import { Memory, MemtideError, init, wasmMemoryBytes } from "../../dist/memtide/node.js";
import { rejectsWith } from "./rejects.mjs";
import { ModelCore } from "../../dist/memtide/wasm/memtide_model.js";

const modelDir = process.env.MEMTIDE_MODEL_DIR ??
  execFileSync("bash", ["scripts/fetch-model.sh"], { encoding: "utf8" }).trim().split("\n").pop();
const model = {
  onnx: await readFile(`${modelDir}/model.onnx`),
  tokenizer: await readFile(`${modelDir}/tokenizer.json`, "utf8"),
};
const modelWasmPath = new URL("../../dist/memtide/wasm/memtide_model_bg.wasm", import.meta.url);
const golden = JSON.parse(await readFile(new URL("../data/minilm-int8-golden.json", import.meta.url), "utf8"));
const home = { userId: "ann", workspaceId: "home" };

// Runs first: nothing in this process has started the model's module yet.
test("a lexical-only app never loads the model's module; the first model starts it", async () => {
  let asked = 0;
  // A thenable the package awaits only when it starts the model's module.
  const modelWasm = { then: (resolve, reject) => { asked++; readFile(modelWasmPath).then(resolve, reject); } };
  await init({ modelWasm });
  const lexicalOnly = wasmMemoryBytes();
  const mem = await Memory.open({ storage: "memory" });
  await mem.ingest({ text: "The ferns want water on Sundays.", scope: home });
  assert.equal((await mem.retrieve({ text: "ferns", scope: home })).length, 1);
  assert.equal((await mem.stats()).retrievalMode, "lexical");
  assert.equal(asked, 0, "no model, no model module");
  assert.ok(wasmMemoryBytes() < lexicalOnly + 16 * 2 ** 20);

  assert.equal(await mem.setModel(model), 1);
  assert.equal(asked, 1, "the first model starts the model's module");
  const stats = await mem.stats();
  assert.equal(stats.retrievalMode, "hybrid");
  // The core's Embedder answers with the model module's id and tokenizer.
  assert.equal(stats.model, `all-MiniLM-L6-v2-int8/${golden.model_sha256.slice(0, 16)}/mean/256`);
  assert.equal(stats.tokenCounting, "tokenizer");
  const injected = await mem.inject({ text: "ferns", scope: home, budgetTokens: 100 });
  assert.equal(injected.estimated, false);
  assert.ok(injected.tokens > 0);
  // The model module holds about 24 MiB live (its word table and weights).
  assert.ok(wasmMemoryBytes() > lexicalOnly + 24 * 2 ** 20, "the model's instance counts in wasmMemoryBytes");
  const hits = await mem.retrieve({ text: "when do the plants get watered", scope: home, explain: true });
  assert.ok(hits[0].explain.semantic > 0.2, `semantic ${hits[0].explain.semantic}`);

  const second = await Memory.open({ storage: "memory", model });
  assert.equal(asked, 1, "one model module per realm, started once");
  await second.close();
  await mem.close();
});

test("the model's module gives the embeddings of the single module before the split, bit for bit", async () => {
  // Rows of little-endian f32, one per golden text embedded alone, made by
  // the single module before the split (tests/data/README.md).
  const before = new Float32Array((await readFile(new URL("../data/minilm-int8-wasm-golden.f32", import.meta.url))).buffer.slice(0));
  const loaded = ModelCore.load(model.onnx, model.tokenizer);
  assert.equal(loaded.modelId(), `all-MiniLM-L6-v2-int8/${golden.model_sha256.slice(0, 16)}/mean/256`);
  assert.equal(loaded.dimensions(), 384);
  assert.equal(before.length, golden.cases.length * 384);
  golden.cases.forEach((c, i) => {
    const row = loaded.embed([c.text]);
    assert.ok(row instanceof Float32Array);
    assert.deepEqual(row, before.subarray(i * 384, (i + 1) * 384), `text ${i}: ${JSON.stringify(c.text.slice(0, 40))}`);
    let dot = 0;
    for (let d = 0; d < 384; d++) dot += row[d] * c.embedding[d];
    assert.ok(dot >= 0.9999, `cosine ${dot} to the reference for text ${i}`);
    // The tokenizer's count, without [CLS]/[SEP] and without truncation.
    if (c.ids.length < 256) assert.equal(loaded.countTokens(c.text), c.ids.length - 2, `text ${i}`);
  });
  // A batch crosses as one Float32Array of rows.
  const texts = golden.cases.slice(0, 3).map((c) => c.text);
  assert.equal(loaded.embed(texts).length, 3 * 384);
  assert.equal(loaded.embed([]).length, 0);
  loaded.free();
});

// The linker takes a module with constructors (tract registers its
// operators through them) and no export calling them for a "command", and
// wraps every export, down to `__wbindgen_malloc`, to run them all first:
// crates/js-model's `start` calls them once instead.
test("the model's module runs its constructors once, when it starts, not at every call", async () => {
  const names = WebAssembly.Module.exports(new WebAssembly.Module(await readFile(modelWasmPath))).map((e) => e.name);
  assert.deepEqual(names.filter((name) => name.endsWith("command_export")), []);
});

test("the model's failures keep their codes, through the core and from the module", async () => {
  const mem = await Memory.open({ storage: "memory" });
  await rejectsWith(mem.setModel({ onnx: new Uint8Array([1, 2, 3]), tokenizer: model.tokenizer }), "MODEL", /^model error: /);
  await rejectsWith(mem.setModel({ onnx: model.onnx, tokenizer: "not json" }), "INVALID_INPUT", /^invalid input: tokenizer\.json/);
  await rejectsWith(mem.setModel({ onnx: "bytes", tokenizer: model.tokenizer }), "INVALID_INPUT", /model\.onnx must be/);
  await rejectsWith(mem.setModel({ onnx: model.onnx, tokenizer: "\ud800" }), "INVALID_INPUT", /lone surrogate/);
  assert.throws(() => ModelCore.load(new Uint8Array([1, 2, 3]), model.tokenizer),
    (error) => error instanceof Error && error.code === "MODEL");
  // An ArrayBuffer and tokenizer bytes load as well.
  const buffer = model.onnx.buffer.slice(model.onnx.byteOffset, model.onnx.byteOffset + model.onnx.byteLength);
  assert.equal(await mem.setModel({ onnx: buffer, tokenizer: new TextEncoder().encode(model.tokenizer) }), 0);
  assert.equal((await mem.stats()).retrievalMode, "hybrid");
  await mem.close();
  await rejectsWith(mem.setModel(model), "CLOSED");
});

test("a model module that cannot start is a MODEL error, the store stays usable, and a later model retries it", () => {
  // A fresh process: this one's model module has started.
  const entry = new URL("../../dist/memtide/node.js", import.meta.url).href;
  const script = `
    import { readFile } from "node:fs/promises";
    import { Memory, init } from ${JSON.stringify(entry)};
    const model = {
      onnx: await readFile(${JSON.stringify(`${modelDir}/model.onnx`)}),
      tokenizer: await readFile(${JSON.stringify(`${modelDir}/tokenizer.json`)}, "utf8"),
    };
    const home = { userId: "ann", workspaceId: "home" };
    await init({ modelWasm: new Uint8Array([0, 97, 115, 109]) });
    const mem = await Memory.open({ storage: "memory" });
    await mem.ingest({ text: "The ferns want water on Sundays.", scope: home });
    const failed = await mem.setModel(model).then(() => null, (e) => ({ name: e.name, code: e.code, message: e.message }));
    const lexical = (await mem.retrieve({ text: "ferns", scope: home })).length;
    await init({ modelWasm: readFile(${JSON.stringify(modelWasmPath.pathname)}) });
    const embedded = await mem.setModel(model);
    const mode = (await mem.stats()).retrievalMode;
    await mem.close();
    console.log(JSON.stringify({ failed, lexical, embedded, mode }));
  `;
  const outcome = JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" }));
  assert.equal(outcome.failed?.name, "MemtideError");
  assert.equal(outcome.failed.code, "MODEL");
  assert.match(outcome.failed.message, /^model error: cannot start the model's WebAssembly module/);
  assert.equal(outcome.lexical, 1, "the store answers lexically meanwhile");
  assert.equal(outcome.embedded, 1, "the next model starts the module afresh");
  assert.equal(outcome.mode, "hybrid");
});

test("the core hands the model's files on without a copy in its own memory", () => {
  // Fresh processes: linear memory never shrinks, so each figure is a
  // first open's. The core checks the tokenizer's text and hands the
  // string on; it copied it in and out before (0.44 MiB of BERT's
  // tokenizer.json, three times that while it was encoded), which left
  // the core 1.8 MiB larger with a model than without one.
  const entry = new URL("../../dist/memtide/node.js", import.meta.url).href;
  const core = new URL("../../dist/memtide/wasm/memtide.js", import.meta.url).href;
  const coreBytes = (withModel) => {
    const script = `
      import { readFile } from "node:fs/promises";
      import { Memory } from ${JSON.stringify(entry)};
      import { wasmMemoryBytes } from ${JSON.stringify(core)};
      const model = ${withModel} ? {
        onnx: await readFile(${JSON.stringify(`${modelDir}/model.onnx`)}),
        tokenizer: await readFile(${JSON.stringify(`${modelDir}/tokenizer.json`)}, "utf8"),
      } : undefined;
      const mem = await Memory.open({ storage: "memory", model });
      const mode = (await mem.stats()).retrievalMode;
      console.log(JSON.stringify({ mode, core: wasmMemoryBytes() }));
    `;
    return JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" }));
  };
  const lexical = coreBytes(false);
  const hybrid = coreBytes(true);
  assert.equal(lexical.mode, "lexical");
  assert.equal(hybrid.mode, "hybrid");
  assert.ok(hybrid.core <= lexical.core + 256 * 1024,
    `the core's memory: ${hybrid.core} bytes with the model, ${lexical.core} without`);
});

test("the model's module keeps its linear memory near what the model holds", () => {
  // A fresh process: linear memory never shrinks, so each figure is the
  // high-water mark so far. The module holds about 24 MiB live once
  // loaded. Before, tract's transients left 5-7 MiB of holes under the
  // word table (31.38 MiB after loading), and a batch of long texts ran
  // two 256-token sequences at once (46.44 MiB after it); now the table is
  // read last, in pieces that fill those holes, and a run holds one
  // sequence of the longest length (25.63 and 36.63 MiB).
  const entry = new URL("../../dist/memtide/node.js", import.meta.url).href;
  const core = new URL("../../dist/memtide/wasm/memtide.js", import.meta.url).href;
  const script = `
    import { readFile } from "node:fs/promises";
    import { Memory, wasmMemoryBytes } from ${JSON.stringify(entry)};
    import { wasmMemoryBytes as coreBytes } from ${JSON.stringify(core)};
    const model = {
      onnx: await readFile(${JSON.stringify(`${modelDir}/model.onnx`)}),
      tokenizer: await readFile(${JSON.stringify(`${modelDir}/tokenizer.json`)}, "utf8"),
    };
    const modelBytes = () => wasmMemoryBytes() - coreBytes();
    const mem = await Memory.open({ storage: "memory", model });
    const loaded = modelBytes();
    const words = "the garden alice said tomorrow we will plant tomatoes and basil near the fence".split(" ");
    const long = (i) => Array.from({ length: 300 }, (_, k) => words[(i * 7 + k * 3) % words.length]).join(" ");
    const scope = { userId: "ann", workspaceId: "home" };
    const added = await mem.ingest(Array.from({ length: 16 }, (_, i) => ({ text: long(i) + " " + i, scope })));
    const mode = (await mem.stats()).retrievalMode;
    console.log(JSON.stringify({ mode, loaded, afterLong: modelBytes(), added: added.length }));
  `;
  const figures = JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" }));
  assert.equal(figures.mode, "hybrid");
  assert.equal(figures.added, 16);
  const MiB = 2 ** 20;
  assert.ok(figures.loaded < 27 * MiB, `the model's module after loading: ${figures.loaded} bytes`);
  assert.ok(figures.afterLong < 40 * MiB, `the model's module after 16 texts of 256 tokens: ${figures.afterLong} bytes`);
});

test("the package ships both modules, each a fraction of the single one", async () => {
  const core = (await stat(new URL("../../dist/memtide/wasm/memtide_bg.wasm", import.meta.url))).size;
  const modelModule = (await stat(modelWasmPath)).size;
  // The core has no tract: far smaller than the model's module.
  assert.ok(core < modelModule, `core ${core} bytes, model ${modelModule} bytes`);
  const exports = JSON.parse(await readFile(new URL("../../dist/memtide/package.json", import.meta.url), "utf8")).exports;
  assert.equal(exports["./wasm"], "./wasm/memtide_bg.wasm");
  assert.equal(exports["./model-wasm"], "./wasm/memtide_model_bg.wasm");
});
