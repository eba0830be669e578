// Node tests of the package's IndexedDB storage, on fake-indexeddb (an
// in-memory IndexedDB for Node): the default storage when an `indexedDB`
// global exists, persistence across close and reopen, and two instances on
// one database — as two browser tabs — neither losing the other's writes and
// each learning of the other's through BroadcastChannel. The same backend
// runs in Chromium in scripts/test-browser.sh.
import "fake-indexeddb/auto";
import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory } from "../../dist/memtide/node.js";

const scope = { userId: "u1", workspaceId: "tabs" };
let databases = 0;
const freshName = () => `memtide-node-test-${process.pid}-${databases++}`;

test("IndexedDB is the default and survives close and reopen", async () => {
  const name = freshName();
  const stages = [];
  const mem = await Memory.open({ name, onProgress: (p) => stages.push(p) });
  assert.deepEqual(stages[0], { stage: "storage", persisted: false });
  const [added] = await mem.ingest({ text: "The office wifi password rotates monthly.", scope, pinned: true });
  await mem.update(added.id, { tags: ["office"] });
  const exported = await mem.export();
  await mem.close();

  const reopened = await Memory.open({ name, storage: "indexeddb" });
  assert.deepEqual(JSON.parse(await reopened.export()).items, JSON.parse(exported).items);
  const hits = await reopened.retrieve({ text: "wifi password", scope });
  assert.equal(hits[0].item.id, added.id);
  assert.deepEqual(hits[0].item.tags, ["office"]);
  await reopened.close();
});

test("two instances on one database keep both writers' memories", async () => {
  const name = freshName();
  let changes = 0;
  const tabA = await Memory.open({ name });
  const tabB = await Memory.open({ name, onChange: () => changes++ });

  // Interleaved writes: each commit finds the other's manifest and retries.
  const writes = [];
  for (let i = 0; i < 10; i++) {
    writes.push(tabA.ingest({ text: `Tab A memory number ${i}.`, scope }));
    writes.push(tabB.ingest({ text: `Tab B memory number ${i}.`, scope }));
  }
  await Promise.all(writes);
  await tabA.refresh();
  await tabB.refresh();
  assert.equal((await tabA.stats()).items, 20);
  assert.equal((await tabB.stats()).items, 20);

  // A tab learns of the other's writes without being asked.
  const before = changes;
  await tabA.ingest({ text: "Written by tab A alone.", scope });
  for (let i = 0; i < 50 && changes === before; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.ok(changes > before, "tab B was told of tab A's write");
  const seen = await tabB.retrieve({ text: "written by tab A alone", scope, dryRun: true });
  assert.equal(seen[0].item.text, "Written by tab A alone.");

  await tabA.close();
  await tabB.close();
  const reopened = await Memory.open({ name });
  assert.equal((await reopened.stats()).items, 21, "nothing lost on disk either");
  await reopened.close();
});

/** The keys of database `name` that start with `prefix`. */
async function storedKeys(name, prefix) {
  const db = await new Promise((resolve, reject) => {
    const request = indexedDB.open(name);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  try {
    const keys = await new Promise((resolve, reject) => {
      const request = db.transaction("kv").objectStore("kv").getAllKeys();
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    return keys.filter((key) => key.startsWith(prefix));
  } finally {
    db.close();
  }
}

test("opening reads the manifest, then every segment in one transaction", async () => {
  const name = freshName();
  const mem = await Memory.open({ name });
  // Each ingest is larger than the log holds (64 KiB), so it folds into a
  // segment of its own. Distinct words keep the memories apart (no
  // near-duplicate merging).
  const words = ["fern", "kettle", "harbor", "violin", "ledger", "quartz", "maple", "tunnel", "saffron", "orbit", "pebble", "lantern"];
  const text = (batch, i) => `Batch ${batch} entry ${i}: ` +
    Array.from({ length: 12 }, (_, k) => `${words[(i * 7 + k * 5 + batch) % words.length]}${(i * 31 + k * 17 + batch * 13) % 997}`).join(" ");
  for (let batch = 0; batch < 3; batch++) {
    await mem.ingest(Array.from({ length: 300 }, (_, i) => ({ text: text(batch, i), scope })));
  }
  assert.equal((await mem.stats()).items, 900);
  await mem.close();
  const segments = await storedKeys(name, "seg/");
  assert.ok(segments.length >= 3, `the store holds ${segments.length} segments`);

  const counts = { readonly: 0, readwrite: 0, gets: 0 };
  const { transaction } = IDBDatabase.prototype;
  const { get } = IDBObjectStore.prototype;
  IDBDatabase.prototype.transaction = function (stores, mode, ...rest) {
    counts[mode ?? "readonly"] += 1;
    return transaction.call(this, stores, mode, ...rest);
  };
  IDBObjectStore.prototype.get = function (...args) {
    counts.gets += 1;
    return get.apply(this, args);
  };
  let reopened;
  try {
    reopened = await Memory.open({ name });
  } finally {
    IDBDatabase.prototype.transaction = transaction;
    IDBObjectStore.prototype.get = get;
  }
  // One transaction for the manifest, one for all the segments it names.
  assert.deepEqual(counts, { readonly: 2, readwrite: 0, gets: 1 + segments.length });
  assert.equal((await reopened.stats()).items, 900);
  const hits = await reopened.retrieve({ text: text(2, 123), scope, dryRun: true });
  assert.equal(hits[0].item.text, text(2, 123));
  await reopened.close();
});
