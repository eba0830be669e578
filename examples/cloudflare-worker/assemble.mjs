// Assembles the Worker example as a bundler would — the worker, its modules,
// and the built package (dist/mnemo) with its .wasm as a compiled module —
// into a temporary directory, and reports the bundle's size.
import { cp, mkdtemp, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const root = new URL("../../", import.meta.url);
const example = new URL("examples/cloudflare-worker/", root);

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

/** The bundle directory and its size, raw and gzipped, in bytes. */
export async function assembleWorker(into) {
  const bundle = into ?? join(await mkdtemp(join(tmpdir(), "mnemo-worker-")), "bundle");
  await cp(new URL("dist/mnemo/", root), join(bundle, "mnemo"), { recursive: true });
  const worker = (await readFile(new URL("worker.js", example), "utf8"))
    .replace('from "mnemo"', 'from "./mnemo/workerd.js"')
    .replace('from "../http-handler.js"', 'from "./http-handler.js"');
  await writeFile(join(bundle, "worker.js"), worker);
  await cp(new URL("kv-storage.js", example), join(bundle, "kv-storage.js"));
  await cp(new URL("examples/http-handler.js", root), join(bundle, "http-handler.js"));
  const shipped = (path) => /\.(js|wasm)$/.test(path);
  return { bundle, size: await size(bundle, shipped), wasm: await size(bundle, (p) => p.endsWith(".wasm")) };
}
