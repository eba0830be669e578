// Runs the Worker examples locally: assembles one as a bundler would — the
// worker, the shared HTTP handler, and the built package (dist/memtide) with
// its .wasm as a compiled module, `memtide` and its subpaths resolved through
// the package's exports — into a directory (reporting the bundle's size),
// starts it in workerd through miniflare, and uploads the model files to its
// MODEL namespace. Used by tests/js/worker.test.mjs,
// tests/js/durable-object.test.mjs and measure-memory.mjs.
import { cp, mkdtemp, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { Miniflare } from "miniflare";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const root = new URL("../../", import.meta.url);

async function size(dir, only) {
  let raw = 0;
  let gzipped = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath ?? entry.path, entry.name);
    if (!only(path)) continue;
    raw += (await stat(path)).size;
    gzipped += gzipSync(await readFile(path), { level: 9 }).length;
  }
  return { raw, gzipped };
}

/**
 * The bundle directory of `examples/<example>/worker.js` and its size, raw
 * and gzipped, in bytes.
 */
export async function assembleWorker(into, { example = "cloudflare-worker" } = {}) {
  const bundle = into ?? join(await mkdtemp(join(tmpdir(), "memtide-worker-")), "bundle");
  await cp(new URL("dist/memtide/", root), join(bundle, "memtide"), { recursive: true });
  const { exports } = JSON.parse(await readFile(new URL("dist/memtide/package.json", root), "utf8"));
  const worker = (await readFile(new URL(`examples/${example}/worker.js`, root), "utf8"))
    .replace('from "memtide"', 'from "./memtide/workerd.js"')
    .replace(/from "memtide\/([a-z-]+)"/g, (_, sub) => `from "./memtide/${exports[`./${sub}`].default.slice(2)}"`)
    .replace('from "../http-handler.js"', 'from "./http-handler.js"');
  await writeFile(join(bundle, "worker.js"), worker);
  await cp(new URL("examples/http-handler.js", root), join(bundle, "http-handler.js"));
  const shipped = (path) => /\.(js|wasm)$/.test(path);
  return { bundle, size: await size(bundle, shipped), wasm: await size(bundle, (p) => p.endsWith(".wasm")) };
}

/**
 * Starts the assembled Worker in workerd on 127.0.0.1, KV and Durable
 * Objects kept in `persist` when given. `durableObjects`: miniflare's
 * bindings of the Worker's Durable Object classes.
 */
export function startWorker(bundle, { persist, durableObjects } = {}) {
  return new Miniflare({
    modules: true,
    scriptPath: join(bundle, "worker.js"),
    modulesRoot: bundle,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    kvNamespaces: ["MEMORIES", "MODEL"],
    kvPersist: persist,
    durableObjects,
    durableObjectsPersist: persist && join(persist, "durable-objects"),
    compatibilityDate: "2026-04-01",
    host: "127.0.0.1",
    cf: false,
  });
}

/** Puts `model.onnx` and `tokenizer.json` from `modelDir` into the Worker's MODEL namespace. */
export async function putModel(mf, modelDir) {
  const model = await mf.getKVNamespace("MODEL");
  const onnx = await readFile(`${modelDir}/model.onnx`);
  // An ArrayBuffer of its own: miniflare refuses a Buffer's pooled view.
  await model.put("model.onnx", onnx.buffer.slice(onnx.byteOffset, onnx.byteOffset + onnx.length));
  await model.put("tokenizer.json", await readFile(`${modelDir}/tokenizer.json`, "utf8"));
}
