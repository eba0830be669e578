// The checks of the WebAssembly modules' allocator (crates/js/src/alloc.rs,
// crates/js-model/src/alloc.rs), run by allocator.test.mjs in Node and, in
// a Chromium tab, by browser.test.mjs: a self-contained module the page
// imports as it is. Linear memory never grows back, so an allocator that
// did not reuse what a store frees would grow it on every cycle of work
// below; each check measures the memory after a first cycle and after
// several more of the same.

const SCOPE = { userId: "alloc", workspaceId: "churn" };
const ROUNDS = 4;
const BATCH = 250;
const TEXTS = 1000;

const text = (round, i) =>
  `Round ${round}, note ${i}: the ${["ferry", "bakery", "library", "garden"][i % 4]} opens at ${i % 12 + 1} o'clock ` +
  `and ${"abcdefghij".slice(0, 1 + (i % 10))} brings the ${i % 7 === 0 ? "long list of errands, tickets and receipts" : "keys"}.`;

/** An adapter over a Map (no `batch`): stores written in segments. */
function mapStorage(map) {
  return {
    get: (key) => map.get(key) ?? null,
    put: (key, value) => void map.set(key, value.slice()),
    delete: (key) => void map.delete(key),
    list: (prefix) => [...map.keys()].filter((k) => k.startsWith(prefix)),
  };
}

/**
 * Fills one store, erases it (hard delete) and fills it again, `ROUNDS`
 * times, then opens the full store `ROUNDS` times more (closing each);
 * returns the memory after each cycle, in bytes, the memories held after
 * each fill (the near-duplicate merges make them about 900 of 1,000) and
 * the hits of a query on the last open.
 */
export async function churn({ Memory, wasmMemoryBytes }) {
  const map = new Map();
  const memory = await Memory.open({ storage: mapStorage(map) });
  const afterFill = [];
  const items = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (round > 0) await memory.deleteAll({ scope: SCOPE, hard: true });
    for (let i = 0; i < TEXTS; i += BATCH) {
      const inputs = [];
      for (let j = i; j < i + BATCH; j++) inputs.push({ text: text(round, j), scope: SCOPE });
      await memory.ingest(inputs);
    }
    items.push((await memory.stats()).items);
    afterFill.push(wasmMemoryBytes());
  }
  await memory.close();
  const afterOpen = [];
  let hits = 0;
  for (let open = 0; open < ROUNDS; open++) {
    const reopened = await Memory.open({ storage: mapStorage(map) });
    hits = (await reopened.retrieve({ text: "when does the bakery open?", scope: SCOPE, dryRun: true })).length;
    await reopened.close();
    afterOpen.push(wasmMemoryBytes());
  }
  return { afterFill, afterOpen, items, hits };
}

/**
 * With the model: embeds a batch of 64 texts of varied lengths into a store
 * in memory and erases them (hard delete), three times; returns the
 * memory of both instances after each round and the last round's counts. The model's module reuses the
 * tensors each batch frees (crates/js-model/src/alloc.rs).
 */
export async function embedChurn({ Memory, wasmMemoryBytes, model }) {
  const memory = await Memory.open({ storage: "memory", model });
  const afterBatch = [];
  for (let round = 0; round < 3; round++) {
    if (round > 0) await memory.deleteAll({ scope: SCOPE, hard: true });
    const inputs = [];
    for (let i = 0; i < 64; i++) inputs.push({ text: `${text(round, i)} ${"More about it. ".repeat(i % 9)}`, scope: SCOPE });
    await memory.ingest(inputs);
    afterBatch.push(wasmMemoryBytes());
  }
  const { embedded, items } = await memory.stats();
  await memory.close();
  return { afterBatch, embedded, items };
}
