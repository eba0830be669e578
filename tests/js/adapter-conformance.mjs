// The storage conformance suite of memtide's adapters: one list of cases,
// runtime-neutral (ES modules, no Node API), run in each adapter's real
// runtime by a runner that imports the package by name (tests/apps/
// adapters-*.test.mjs: Node, workerd, Deno).
//
// `adapterCases({ Memory, fresh, batch })`: `Memory` is the package's class;
// `fresh()` resolves to a new, empty backing store `{ open, dump }`, where
// `open()` returns a new adapter object over it (called again: as a new
// process would) and `dump()` resolves to every value the backing store
// holds, raw (chunks, files, rows: Uint8Arrays); `batch` says whether the
// adapter has an atomic `batch`. Returns `[{ name, run }]`.

const encoder = new TextEncoder();
const scope = { userId: "conformance", workspaceId: "adapters" };

function fail(message) {
  throw new Error(`assertion failed: ${message}`);
}
function equal(actual, expected, message) {
  const [a, e] = [JSON.stringify(actual), JSON.stringify(expected)];
  if (a !== e) fail(`${message}: expected ${e}, got ${a}`);
}
/** Compares bytes without printing megabytes. */
function sameBytes(actual, expected, message) {
  if (!(actual instanceof Uint8Array || actual instanceof ArrayBuffer)) fail(`${message}: not bytes but ${actual}`);
  const a = new Uint8Array(actual);
  if (a.length !== expected.length) fail(`${message}: ${a.length} bytes instead of ${expected.length}`);
  for (let i = 0; i < a.length; i++) if (a[i] !== expected[i]) fail(`${message}: byte ${i} differs`);
}
const absent = (value) => value === null || value === undefined;

/** `size` bytes of a pattern unique to `seed`, so it can be searched for in a dump. */
function pattern(size, seed) {
  const bytes = new Uint8Array(size);
  let x = seed * 2654435761 >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    bytes[i] = x & 0xff;
  }
  return bytes;
}

/** True when `needle` occurs in any of the values. */
function holds(values, needle) {
  for (const value of values) {
    const hay = new Uint8Array(value);
    outer: for (let i = 0; i + needle.length <= hay.length; i++) {
      for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
      return true;
    }
  }
  return false;
}

/** `call` must fail (by throwing or rejecting: the contract allows both) with `code` when given. */
async function throwsCode(call, code, message) {
  let error;
  try {
    await call();
  } catch (e) {
    error = e;
  }
  if (!error) fail(`${message}: did not throw`);
  if (code && error.code !== code) fail(`${message}: threw ${error.code ?? error} instead of ${code}`);
}

async function sortedList(adapter, prefix) {
  return (await adapter.list(prefix)).sort();
}

export function adapterCases({ Memory, fresh, batch }) {
  const cases = [
    ["missing keys, empty lists, deleting a missing key", async (a) => {
      equal(absent(await a.get("item/none")), true, "get of a missing key");
      equal(await a.list("item/"), [], "list of an empty store");
      await a.delete("item/none");
      equal(typeof a.batch, batch ? "function" : "undefined", "batch is there exactly when declared");
    }],
    ["put, get, overwrite and empty values", async (a) => {
      await a.put("item/a", encoder.encode("first"));
      sameBytes(await a.get("item/a"), encoder.encode("first"), "read back");
      await a.put("item/a", encoder.encode("2nd"));
      sameBytes(await a.get("item/a"), encoder.encode("2nd"), "overwritten with a shorter value");
      await a.put("item/empty", new Uint8Array(0));
      sameBytes(await a.get("item/empty"), new Uint8Array(0), "an empty value is a value, not a missing key");
      equal(await sortedList(a, "item/"), ["item/a", "item/empty"], "both listed");
    }],
    ["list by prefix", async (a) => {
      for (const key of ["a/1", "a/2", "ab", "b/1", "a"]) await a.put(key, encoder.encode(key));
      equal(await sortedList(a, "a/"), ["a/1", "a/2"], "prefix a/");
      equal(await sortedList(a, "a"), ["a", "a/1", "a/2", "ab"], "prefix a");
      equal(await sortedList(a, ""), ["a", "a/1", "a/2", "ab", "b/1"], "every key");
      equal(await a.list("c"), [], "no key");
      await a.delete("a/1");
      equal(await sortedList(a, "a/"), ["a/2"], "after a delete");
    }],
    ["unicode, odd and 512-byte keys", async (a) => {
      const long = `item/${"é".repeat(253)}x`; // 5 + 506 + 1 = 512 bytes
      equal(encoder.encode(long).length, 512, "the long key's length");
      const keys = ["item/日本語", "item/emoji 🧠", "item/.", "item/..", "item/Case", "item/case", "item/a%2Fb", "item/_5f", long];
      for (const [i, key] of keys.entries()) await a.put(key, encoder.encode(`value ${i}`));
      equal(await sortedList(a, "item/"), [...keys].sort(), "every key listed as written");
      for (const [i, key] of keys.entries()) sameBytes(await a.get(key), encoder.encode(`value ${i}`), `value of ${key}`);
      equal(await sortedList(a, "item/日"), ["item/日本語"], "a non-ASCII prefix");
    }],
    ["values over 64 KiB and over 2 MiB, shrunk and deleted without leftovers", async (a, store) => {
      const medium = pattern(100 * 1024 + 7, 1);
      const big = pattern(5 * 1024 * 1024 + 3, 2);
      await a.put("seg/medium", medium);
      await a.put("seg/big", big);
      sameBytes(await a.get("seg/medium"), medium, "100 KiB value");
      sameBytes(await a.get("seg/big"), big, "5 MiB value");
      sameBytes(await store.open().get("seg/big"), big, "5 MiB value through a new adapter");
      await a.put("seg/big", encoder.encode("small now"));
      sameBytes(await a.get("seg/big"), encoder.encode("small now"), "shrunk");
      const tail = big.subarray(big.length - 4096);
      equal(holds(await store.dump(), tail), false, "no part of the old big value is stored after it shrank");
      await a.delete("seg/medium");
      equal(absent(await a.get("seg/medium")), true, "deleted");
      equal(holds(await store.dump(), medium.subarray(medium.length - 4096)), false, "no part of a deleted value is stored");
    }],
  ];
  if (batch) {
    cases.push(
      ["batch applies puts and deletes together, or a batch too large for the store not at all", async (a, store) => {
        await a.put("k/gone", encoder.encode("old"));
        await a.batch([{ type: "put", key: "k/1", value: encoder.encode("one") }, { type: "delete", key: "k/gone" }]);
        equal(await sortedList(a, "k/"), ["k/1"], "after the batch");
        const big = pattern(3 * 1024 * 1024, 3);
        const ops = [{ type: "put", key: "k/2", value: encoder.encode("two") }, { type: "put", key: "k/big", value: big }, { type: "delete", key: "k/1" }];
        let tooLarge = false;
        try {
          await a.batch(ops);
        } catch (error) {
          // The contract's way out for a store with small transactions (memtide then journals).
          if (error?.code !== "BATCH_TOO_LARGE") throw error;
          tooLarge = true;
        }
        if (tooLarge) {
          equal(await sortedList(a, "k/"), ["k/1"], "a batch refused as too large changed nothing");
          equal(holds(await store.dump(), big.subarray(0, 4096)), false, "no part of the refused batch's value is stored");
        } else {
          equal(await sortedList(a, "k/"), ["k/2", "k/big"], "after the big batch");
          sameBytes(await a.get("k/big"), big, "a 3 MiB value in a batch");
        }
      }],
      ["batch expectation: applied only when the key holds the value", async (a) => {
        await a.put("meta/manifest", encoder.encode("v1"));
        const ops = [{ type: "put", key: "k/x", value: encoder.encode("x") }, { type: "put", key: "meta/manifest", value: encoder.encode("v2") }];
        await throwsCode(() => a.batch(ops, { key: "meta/manifest", value: encoder.encode("v0") }), "CONFLICT", "another value expected");
        await throwsCode(() => a.batch(ops, { key: "meta/manifest", value: null }), "CONFLICT", "absence expected");
        equal(absent(await a.get("k/x")), true, "a failed expectation writes nothing");
        sameBytes(await a.get("meta/manifest"), encoder.encode("v1"), "the expected key unchanged");
        await a.batch(ops, { key: "meta/manifest", value: encoder.encode("v1") });
        sameBytes(await a.get("meta/manifest"), encoder.encode("v2"), "a met expectation applies");
        await a.batch([{ type: "put", key: "k/y", value: encoder.encode("y") }], { key: "meta/none", value: null });
        sameBytes(await a.get("k/y"), encoder.encode("y"), "absence met");
      }],
      ["a batch that fails changes nothing", async (a) => {
        await a.put("k/keep", encoder.encode("kept"));
        const ops = [
          { type: "put", key: "k/new", value: encoder.encode("new") },
          { type: "delete", key: "k/keep" },
          { type: "put", key: "k/bad", value: "not bytes" },
          { type: "put", key: "k/after", value: encoder.encode("after") },
        ];
        await throwsCode(() => a.batch(ops), undefined, "a batch with an op that is not bytes");
        equal(await sortedList(a, "k/"), ["k/keep"], "no op of the failed batch applied");
        sameBytes(await a.get("k/keep"), encoder.encode("kept"), "the deleted key kept");
      }],
    );
  }
  cases.push(
    ["memories survive closing and reopening with a new adapter", async (a, store) => {
      let mem = await Memory.open({ storage: a });
      const long = `The observatory log, entry ${"ü".repeat(20_000)} ends here.`;
      const bulk = Array.from({ length: 150 }, (_, i) => ({ text: `Bulk fact number ${i} concerns shelf ${i * 7}.`, scope }));
      const added = await mem.ingest([
        { text: "The ferry to Lindholm leaves at 7:40.", scope },
        { text: "Meine Lieblingsfarbe ist Türkis 🐢.", scope, pinned: true },
        { text: long, scope },
        ...bulk,
      ]);
      equal(added.filter((r) => r.outcome === "added").length, 153, "every memory added");
      await mem.close();
      mem = await Memory.open({ storage: store.open() });
      equal((await mem.stats()).items, 153, "every memory after reopening");
      const [hit] = await mem.retrieve({ text: "when does the ferry leave?", scope });
      equal(hit?.item.text, "The ferry to Lindholm leaves at 7:40.", "retrieved after reopening");
      equal((await mem.get(added[2].id)).text, long, "the long memory whole");
      await mem.close();
    }],
    ["after a hard delete no stored value holds the deleted text", async (a, store) => {
      const mem = await Memory.open({ storage: a });
      const secret = "The vault code is quixotic-marmalade-8341.";
      const [kept, gone] = await mem.ingest([
        { text: "The garden hose is in the shed.", scope },
        { text: secret, scope },
      ]);
      equal(holds(await store.dump(), encoder.encode("quixotic-marmalade")), true, "the text is stored before the delete");
      await mem.delete(gone.id, { hard: true });
      await mem.close();
      equal(holds(await store.dump(), encoder.encode("quixotic-marmalade")), false, "no stored value holds the deleted text");
      const again = await Memory.open({ storage: store.open() });
      equal((await again.stats()).items, 1, "the other memory stays");
      equal((await again.get(kept.id)).text, "The garden hose is in the shed.", "and reads back");
      await again.close();
    }],
    ["after purgeExpired no stored value holds the expired text", async (a, store) => {
      const mem = await Memory.open({ storage: a });
      const expired = "The old alarm code was vermilion-pelican-2207.";
      const [kept, gone] = await mem.ingest([
        { text: "The spare key is under the blue pot.", scope },
        // Said two days ago, kept for one day: expired when stored.
        { text: expired, scope, createdAt: new Date(Date.now() - 2 * 86_400_000).toISOString(), privacy: { retentionDays: 1 } },
      ]);
      equal(gone.outcome, "added", "the expiring memory is stored");
      equal(holds(await store.dump(), encoder.encode("vermilion-pelican")), true, "the text is stored before the purge");
      equal(await mem.retrieve({ text: "alarm code", scope }), [], "an expired memory is not retrieved");
      equal(await mem.purgeExpired(), { purged: 1 }, "purgeExpired erases one memory");
      await mem.close();
      equal(holds(await store.dump(), encoder.encode("vermilion-pelican")), false, "no stored value holds the expired text");
      const again = await Memory.open({ storage: store.open() });
      equal((await again.stats()).items, 1, "the other memory stays");
      equal((await again.get(kept.id)).text, "The spare key is under the blue pot.", "and reads back");
      await again.close();
    }],
  );
  return cases.map(([name, body]) => ({
    name,
    run: async () => {
      const store = await fresh();
      await body(store.open(), store);
    },
  }));
}
