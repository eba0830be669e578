// The storage conformance suite (tests/js/adapter-conformance.mjs) in Node,
// for `memtide/fs`, the package imported by name from the installed tarball
// (scripts/pack-apps.sh). `dump` reads every file under the directory, the
// write-ahead file and temporary files included. Then the write-ahead file
// of `batch`, with applying a committed batch made to fail.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, readdir, rm, rmdir } from "node:fs/promises";
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

test("memtide/fs: a batch committed to its write-ahead file is applied in full when the directory is next used", async () => {
  const dir = join(work, "interrupted");
  const a = new FsStorage(dir);
  const bytes = (text) => new TextEncoder().encode(text);
  await a.put("k/old", bytes("old"));
  // A directory where the batch's second key's file goes makes applying it
  // fail after the commit point, as a crash there would.
  await mkdir(join(dir, "k_2fb.v"));
  await a.batch([{ type: "put", key: "k/a", value: bytes("a") }, { type: "put", key: "k/b", value: bytes("b") }, { type: "delete", key: "k/old" }]);
  assert.ok((await readdir(dir)).includes("batch.wal"), "the write-ahead file stays until the batch is applied");
  await assert.rejects(a.get("k/a"), "no read of a half-applied batch while it cannot be finished");
  await rmdir(join(dir, "k_2fb.v"));
  const reopened = new FsStorage(dir); // as a new process would
  assert.deepEqual((await reopened.list("k/")).sort(), ["k/a", "k/b"]);
  assert.equal(new TextDecoder().decode(await reopened.get("k/b")), "b");
  assert.ok(!(await readdir(dir)).includes("batch.wal"), "the write-ahead file is gone once applied");
});
