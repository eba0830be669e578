// The storage conformance suite (tests/js/adapter-conformance.mjs) in Node,
// for `memtide/fs`, the package imported by name from the installed tarball
// (scripts/pack-apps.sh). `dump` reads every file under the directory, the
// write-ahead file and temporary files included.
import { test, after } from "node:test";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Memory } from "memtide";
import { FsStorage } from "memtide/fs";
import { adapterCases } from "../js/adapter-conformance.mjs";

const work = await mkdtemp(join(tmpdir(), "memtide-fs-"));
after(() => rm(work, { recursive: true, force: true }));
let stores = 0;

async function fresh() {
  const dir = join(work, `store-${stores++}`);
  return {
    open: () => new FsStorage(dir),
    dump: async () => {
      const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
      const files = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath ?? e.path, e.name));
      return Promise.all(files.map((f) => readFile(f)));
    },
  };
}

for (const { name, run } of adapterCases({ Memory, fresh, batch: true })) test(`memtide/fs: ${name}`, run);
