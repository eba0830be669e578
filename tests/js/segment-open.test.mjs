// Opening a store through the package loads each segment's newest records
// as it decodes the segment (src/layout/read.rs): a store whose first
// segment holds versions that a newer segment and the log override reopens
// as its newest versions and answers as the instance that wrote it; a
// segment damaged under a live instance fails its refresh with `CORRUPT`
// and leaves what the instance holds.
import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory } from "../../dist/memtide/node.js";
import { mapAdapter } from "./map-adapter.mjs";
import { rejectsWith } from "./rejects.mjs";

const scope = { userId: "u", workspaceId: "w" };
const words = ["fern", "kettle", "harbor", "violin", "ledger", "quartz", "maple", "tunnel", "saffron", "orbit", "pebble", "lantern"];
// Distinct words keep the memories apart (no near-duplicate merging); each
// text has a word of its own (`w<i>x`).
const text = (i) => `Entry w${i}x: ` +
  Array.from({ length: 10 }, (_, k) => `${words[(i * 7 + k * 5) % words.length]}${(i * 31 + k * 17) % 997}`).join(" ");
// From the first round on, tagged with it: a new text would erase the
// versions it replaces instead of overriding them.
const keyed = (i, round) => ({ text: text(i), scope, key: `k${i}`, ...(round > 0 ? { tags: [`round-${round}`] } : {}) });
const segments = (map) => [...map.keys()].filter((k) => k.startsWith("seg/"));
const contents = async (memory) => {
  const exported = JSON.parse(await memory.export());
  delete exported.exportedAt;
  return exported;
};
const answers = async (memory, query) =>
  (await memory.retrieve({ text: query, scope, limit: 20, dryRun: true })).map((hit) => [hit.item.id, hit.score]);

test("keys overridden by a newer segment and the log reopen as their newest versions", async () => {
  const map = new Map();
  const writer = await Memory.open({ storage: mapAdapter({ map }) });
  // Each batch is larger than the log takes: a segment each.
  const ids = (await writer.upsert(Array.from({ length: 300 }, (_, i) => keyed(i, 0)))).map((r) => r.id);
  await writer.upsert(Array.from({ length: 80 }, (_, i) => keyed(i, 1)));
  // In the log: a third version of a memory, and a soft delete.
  await writer.update(ids[0], { tags: ["final"] });
  await writer.delete(ids[200]);
  assert.equal(segments(map).length, 2, segments(map).join());
  const first = Buffer.from(map.get(segments(map).sort()[0]));
  assert.ok(first.includes("Entry w0x") && !first.includes("round-1"), "the first segment still holds the version the second overrides");

  const reader = await Memory.open({ storage: mapAdapter({ map }) });
  assert.deepEqual(await contents(reader), await contents(writer));
  assert.deepEqual((await reader.get(ids[0])).tags, ["final"]);
  assert.deepEqual((await reader.get(ids[79])).tags, ["round-1"]);
  assert.deepEqual((await reader.get(ids[80])).tags, []);
  assert.ok((await reader.get(ids[200])).deletedAt);
  for (const query of ["Entry w0x", "w5x round", "w200x", `${words[3]} ${words[7]}`, "w250x harbor"]) {
    assert.deepEqual(await answers(reader, query), await answers(writer, query), query);
  }
});

test("a damaged segment fails a refresh with CORRUPT and the instance keeps what it held", async () => {
  const map = new Map();
  const writer = await Memory.open({ storage: mapAdapter({ map }) });
  await writer.upsert(Array.from({ length: 300 }, (_, i) => keyed(i, 0)));
  const reader = await Memory.open({ storage: mapAdapter({ map }) });
  const before = await contents(reader);
  const held = segments(map);
  await writer.upsert(Array.from({ length: 300 }, (_, i) => keyed(300 + i, 0)));
  const fresh = segments(map).filter((k) => !held.includes(k));
  assert.equal(fresh.length, 1, segments(map).join());
  const damaged = map.get(fresh[0]).slice();
  damaged[damaged.length >> 1] ^= 0x40;
  map.set(fresh[0], damaged);

  await rejectsWith(reader.refresh(), "CORRUPT");
  assert.deepEqual(await contents(reader), before);
  assert.equal((await answers(reader, "w299x"))[0][0], (await writer.getByKey({ scope, key: "k299" })).id);
  await rejectsWith(Memory.open({ storage: mapAdapter({ map }) }), "CORRUPT");
});
