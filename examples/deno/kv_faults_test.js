// Deno KV adapter under faults (run by `deno test`, scripts/test-deno.sh): a
// value too large for one atomic operation is written (or deleted) in steps;
// a wrapper of `Deno.openKv(":memory:")` throws at each step in turn, before
// or after the step lands (a process that dies, a commit whose answer is
// lost). Reopening must give the last committed value, whole, and after the
// next write no key of the database may hold a chunk that no entry points
// at, nor any bytes of the value the write replaced or was writing.
import { DenoKvStorage } from "memtide/deno-kv";

function assert(condition, message) {
  if (!condition) throw new Error(`assertion failed: ${message}`);
}

const NS = ["t"];
const CHUNK = 60 * 1024;
const SIZE = 21 * CHUNK + 1000; // 22 chunks: beyond one atomic operation, two steps of chunks

/** `SIZE` bytes unique to `seed`. */
function pattern(seed) {
  const bytes = new Uint8Array(SIZE);
  let x = seed * 2654435761 >>> 0;
  for (let i = 0; i < SIZE; i++) {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    bytes[i] = x & 0xff;
  }
  return bytes;
}
const OLD = pattern(1);
const NEW = pattern(2);
/** A value of more chunks than one atomic operation deletes (1000 mutations). */
const HUGE = new Uint8Array(1001 * CHUNK).map((_, i) => (i * 7) % 253);
const SMALL = new TextEncoder().encode("manifest");

const same = (a, b) => a !== null && b !== null && a.length === b.length && a.every((x, i) => x === b[i]);
const hex = (bytes) => Array.from(bytes.subarray(0, 32), (b) => b.toString(16).padStart(2, "0")).join("");
/** The first 32 bytes of each 60 KiB piece: a stored chunk of `value` starts with one of them. */
const pieces = (value) => new Set(Array.from({ length: Math.ceil(value.length / CHUNK) }, (_, i) => hex(value.subarray(i * CHUNK))));

/**
 * `kv` whose mutations (atomic commits, set, delete) call `fault(step)`
 * first (phase "before") and after landing ("after"); `fault` throws to cut
 * the write there.
 */
function faulty(kv, fault) {
  let step = 0;
  const mutate = async (run) => {
    step++;
    await fault(step, "before");
    const result = await run();
    await fault(step, "after");
    return result;
  };
  const atomic = (op) => {
    const wrapped = {
      check: (...a) => (op.check(...a), wrapped),
      set: (...a) => (op.set(...a), wrapped),
      delete: (...a) => (op.delete(...a), wrapped),
      commit: () => mutate(() => op.commit()),
    };
    return wrapped;
  };
  return {
    get: (...a) => kv.get(...a),
    getMany: (...a) => kv.getMany(...a),
    list: (...a) => kv.list(...a),
    atomic: () => atomic(kv.atomic()),
    set: (...a) => mutate(() => kv.set(...a)),
    delete: (...a) => mutate(() => kv.delete(...a)),
  };
}

/** Every key under the namespace, and whether each chunk belongs to its key's current generation. */
async function audit(kv) {
  const entries = new Map();
  const rest = [];
  for await (const e of kv.list({ prefix: NS })) {
    if (e.key[1] === "k") entries.set(e.key[2], e.value);
    else rest.push(e);
  }
  const orphans = [];
  const chunks = [];
  for (const e of rest) {
    const [, kind, key, gen, i] = e.key;
    const entry = entries.get(key);
    if (kind !== "c" || !entry || entry.gen !== gen || i >= entry.chunks) orphans.push(e.key);
    else chunks.push(e.value);
  }
  return { orphans, chunks };
}

const writes = {
  "an overwrite": { before: OLD, run: (s) => s.put("seg/x", NEW), after: NEW },
  "a first write": { before: null, run: (s) => s.put("seg/x", NEW), after: NEW },
  "a delete": { before: HUGE, run: (s) => s.delete("seg/x"), after: null },
};

for (const [name, { before, run, after }] of Object.entries(writes)) {
  for (const phase of ["before", "after"]) {
    Deno.test(`${name} in steps cut at each step (${phase} it lands) leaves the last committed value and nothing else`, async () => {
      let cuts = 0;
      for (let at = 1; ; at++) {
        const kv = await Deno.openKv(":memory:");
        const setup = new DenoKvStorage(kv, NS);
        if (before) await setup.put("seg/x", before);
        await setup.put("manifest", SMALL);
        let cut = false;
        const storage = new DenoKvStorage(faulty(kv, (step, when) => {
          if (step === at && when === phase) {
            cut = true;
            throw new Error(`cut at step ${at} ${phase}`);
          }
        }), NS);
        let failed = null;
        try {
          await run(storage);
        } catch (error) {
          failed = error;
        }
        // A cut after the value landed (while the replaced chunks are erased)
        // is not the write's failure: the next write's collection finishes it.
        assert(failed === null || cut, `step ${at}: an uncut write fails (${failed})`);
        // Reopened, as a new process would: the old value or the new one, whole.
        const reopened = new DenoKvStorage(kv, NS);
        const now = await reopened.get("seg/x");
        const landed = after === null ? now === null : same(now, after);
        assert(landed || (before === null ? now === null : same(now, before)), `step ${at}: a whole value`);
        if (failed === null) assert(landed, `step ${at}: a write that answered lands`);
        if (cut && at === 1 && phase === "before") assert(!landed, "nothing lands before the first step");
        // The next successful write collects what the cut write left.
        await reopened.put("manifest", SMALL);
        const { orphans, chunks } = await audit(kv);
        assert(orphans.length === 0, `step ${at}: unreferenced keys ${JSON.stringify(orphans.slice(0, 3))}`);
        const dead = [OLD, NEW, HUGE].filter((v) => !(now !== null && same(now, v)));
        const deadPieces = new Set(dead.flatMap((v) => [...pieces(v)]));
        assert(!chunks.some((c) => deadPieces.has(hex(c))), `step ${at}: bytes of an erased or unwritten value survive`);
        assert(same(await reopened.get("manifest"), SMALL), "the other key is intact");
        kv.close();
        if (!cut) break;
        cuts++;
      }
      assert(cuts >= 3, `the write took several steps (${cuts})`);
    });
  }
}

Deno.test("a collection by another writer stops a stepwise write in progress, which then fails and leaves nothing", async () => {
  const kv = await Deno.openKv(":memory:");
  const other = new DenoKvStorage(kv, NS);
  await other.put("seg/x", OLD);
  // After the first step of chunks (with the mark) lands, another writer commits.
  const storage = new DenoKvStorage(faulty(kv, async (step, when) => {
    if (step === 1 && when === "after") await other.put("manifest", SMALL);
  }), NS);
  let code = null;
  try {
    await storage.put("seg/x", NEW);
  } catch (error) {
    code = error.code;
  }
  assert(code === "CONFLICT", `the cut write answers CONFLICT (${code})`);
  assert(same(await other.get("seg/x"), OLD), "the old value stays");
  const { orphans, chunks } = await audit(kv);
  assert(orphans.length === 0, `no unreferenced key: ${JSON.stringify(orphans.slice(0, 3))}`);
  const unwritten = pieces(NEW);
  assert(!chunks.some((c) => unwritten.has(hex(c))), "no bytes of the cut value");
  kv.close();
});
