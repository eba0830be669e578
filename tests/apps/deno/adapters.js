// The storage conformance suite for `memtide/deno-kv` in Deno, each case
// over a new Deno KV database file; prints `[{ name, ok, error }]` as JSON
// for tests/apps/adapters-deno.test.mjs.
import { Memory } from "npm:memtide";
import { DenoKvStorage } from "npm:memtide/deno-kv";
import { adapterCases } from "../../js/adapter-conformance.mjs";

const dir = await Deno.makeTempDir({ prefix: "memtide-denokv-" });
const handles = [];

async function fresh() {
  const kv = await Deno.openKv(`${dir}/store-${handles.length}.kv`);
  handles.push(kv);
  return {
    open: () => new DenoKvStorage(kv),
    dump: async () => {
      const values = [];
      for await (const entry of kv.list({ prefix: [] })) {
        values.push(entry.value instanceof Uint8Array ? entry.value : new TextEncoder().encode(JSON.stringify(entry.value)));
      }
      return values;
    },
  };
}

const results = [];
for (const { name, run } of adapterCases({ Memory, fresh, batch: true })) {
  try {
    await run();
    results.push({ name, ok: true });
  } catch (error) {
    results.push({ name, ok: false, error: String(error?.stack ?? error) });
  }
}
for (const kv of handles) kv.close();
await Deno.remove(dir, { recursive: true });
console.log(JSON.stringify(results));
