// How the package reads through an injected adapter: opening a store starts
// every segment's read at once, so an adapter whose reads travel (Workers
// KV, Deno KV) pays one round trip for the segments, not one per segment.
import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory } from "../../dist/memtide/node.js";
import { mapAdapter } from "./map-adapter.mjs";

const scope = { userId: "u", workspaceId: "w" };
const words = ["fern", "kettle", "harbor", "violin", "ledger", "quartz", "maple", "tunnel", "saffron", "orbit", "pebble", "lantern"];
// Distinct words keep the memories apart (no near-duplicate merging).
const text = (batch, i) => `Batch ${batch} entry ${i}: ` +
  Array.from({ length: 12 }, (_, k) => `${words[(i * 7 + k * 5 + batch) % words.length]}${(i * 31 + k * 17 + batch * 13) % 997}`).join(" ");

test("opening through an adapter reads every segment at once", async () => {
  const map = new Map();
  const writer = await Memory.open({ storage: mapAdapter({ map }) });
  // Each ingest is larger than the log holds, so it folds into a segment
  // of its own.
  for (let batch = 0; batch < 3; batch++) {
    await writer.ingest(Array.from({ length: 300 }, (_, i) => ({ text: text(batch, i), scope })));
  }
  await writer.close();
  const segments = [...map.keys()].filter((k) => k.startsWith("seg/"));
  assert.ok(segments.length >= 3, `the store holds ${segments.length} segments`);

  // Every read takes a while, as a network store's does; count how many
  // segment reads are under way at once.
  const adapter = mapAdapter({ map });
  const get = adapter.get.bind(adapter);
  let reading = 0;
  let most = 0;
  let segmentReads = 0;
  adapter.get = async (key) => {
    if (!key.startsWith("seg/")) return get(key);
    segmentReads++;
    reading++;
    most = Math.max(most, reading);
    await new Promise((resolve) => setTimeout(resolve, 20));
    reading--;
    return get(key);
  };
  const reader = await Memory.open({ storage: adapter });
  assert.equal((await reader.stats()).items, 900);
  const hits = await reader.retrieve({ text: text(1, 5), scope, limit: 1, dryRun: true });
  assert.equal(hits[0]?.item.text, text(1, 5));
  await reader.close();
  assert.equal(segmentReads, segments.length, "each segment is read once");
  assert.equal(most, segments.length, "every segment's read is under way at once");
});
