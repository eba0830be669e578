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
// text has a word of its own (`w<i>x`, `r<i>y` once replaced).
const text = (i, round) => `${round === 0 ? `Entry w${i}x` : `Replaced r${i}y`}: ` +
  Array.from({ length: 10 }, (_, k) => `${words[(i * 7 + k * 5 + round) % words.length]}${(i * 31 + k * 17 + round * 13) % 997}`).join(" ");
const keyed = (i, round) => ({ text: text(i, round), scope, key: `k${i}` });
const segments = (map) => [...map.keys()].filter((k) => k.startsWith("seg/"));
const holds = (map, needle) => [...map.values()].some((v) => Buffer.from(v).includes(needle));
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
  assert.ok(holds(map, "Entry w0x"), "the first segment still holds the version the second overrides");

  const reader = await Memory.open({ storage: mapAdapter({ map }) });
  assert.deepEqual(await contents(reader), await contents(writer));
  const first = await reader.get(ids[0]);
  assert.match(first.text, /^Replaced r0y/);
  assert.deepEqual(first.tags, ["final"]);
  assert.match((await reader.get(ids[79])).text, /^Replaced r79y/);
  assert.match((await reader.get(ids[80])).text, /^Entry w80x/);
  assert.ok((await reader.get(ids[200])).deletedAt);
  for (const query of ["Entry w0x", "Replaced r5y", "w200x", `${words[3]} ${words[7]}`, "w250x harbor"]) {
    assert.deepEqual(await answers(reader, query), await answers(writer, query), query);
  }
  assert.ok((await answers(reader, "w0x")).every(([id]) => id !== ids[0]));
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
