// A memtide storage adapter over Deno KV (`Deno.openKv()`), safe with several
// writers (isolates, processes) on one database.
//
// Layout, under a namespace key prefix (default ["memtide"]):
//   [...ns, "k", key]          -> { gen, chunks: n, size }  one entry per memtide key
//   [...ns, "c", key, gen, i]  -> Uint8Array                chunk i of generation gen
// Deno KV values are limited to 64 KiB, so values are split into chunks.
// Each write of a key makes a new generation (a random id): its chunks are
// never changed, only deleted once the key's entry points elsewhere, so a
// reader that finds every chunk of the generation it read read one whole
// value, and one that misses a chunk raced a writer and reads again.
//
// A write that fits one atomic operation (1000 mutations, 800 KiB) is one:
// the chunks, the entry and the removal of the old chunks together. A larger
// value (over about 780 KiB) is written in steps: its chunks first (not yet
// visible), then one atomic operation that points the entry at them, checking
// the entry's versionstamp, then the old chunks are deleted. A process that
// dies between these steps leaves the unreferenced chunks of one value
// behind; they are never read.
//
// `batch(ops, expect)` is one atomic operation that checks the versionstamp
// of the expected key (memtide's manifest, which every write changes): a
// concurrent writer makes it fail with CONFLICT and memtide reloads and
// retries. A batch beyond one atomic operation answers BATCH_TOO_LARGE and
// memtide journals it instead (single-key writes), which is safe for one
// writer at a time.
import { checkOps, coded, join, sameBytes, split } from "./shared.js";

const CHUNK_BYTES = 60 * 1024;
const MAX_MUTATIONS = 1000;
const MAX_MUTATION_BYTES = 800 * 1024;
const MAX_CHECKS = 100;
/** Chunks per atomic operation when a large value is written in steps (12 × 60 KiB < 800 KiB). */
const CHUNKS_PER_STEP = 12;
const READ_ATTEMPTS = 5;

export class DenoKvStorage {
  #kv;
  #ns;

  /** `kv` from `Deno.openKv()`; `namespace` separates several stores in one database. */
  constructor(kv, namespace = ["memtide"]) {
    this.#kv = kv;
    this.#ns = namespace;
  }

  #entryKey(key) { return [...this.#ns, "k", key]; }
  #chunkKey(key, gen, i) { return [...this.#ns, "c", key, gen, i]; }
  #chunkKeys(key, entry) {
    return entry ? Array.from({ length: entry.chunks }, (_, i) => this.#chunkKey(key, entry.gen, i)) : [];
  }

  /** The value, its entry and the entry's versionstamp (nulls when absent). */
  async #read(key) {
    for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      const { value: entry, versionstamp } = await this.#kv.get(this.#entryKey(key));
      if (entry === null) return { value: null, entry: null, versionstamp: null };
      const keys = this.#chunkKeys(key, entry);
      const chunks = [];
      // getMany takes at most 10 keys.
      for (let i = 0; i < keys.length; i += 10) chunks.push(...await this.#kv.getMany(keys.slice(i, i + 10)));
      if (chunks.every((c) => c.value !== null)) {
        return { value: join(chunks.map((c) => c.value)), entry, versionstamp };
      }
    }
    throw new Error(`Deno KV: \`${key}\` kept changing while being read`);
  }

  /** Adds to `op` the mutations writing `key` (value null: deleting it) over `old`; returns their cost. */
  #addWrite(op, key, value, old) {
    const gen = crypto.randomUUID();
    const chunks = value === null ? [] : split(value, CHUNK_BYTES);
    if (value === null) op.delete(this.#entryKey(key));
    else op.set(this.#entryKey(key), { gen, chunks: chunks.length, size: value.length });
    chunks.forEach((chunk, i) => op.set(this.#chunkKey(key, gen, i), chunk));
    const stale = this.#chunkKeys(key, old.entry);
    for (const k of stale) op.delete(k);
    return { mutations: 1 + chunks.length + stale.length, bytes: (value?.length ?? 0) + 100 * (1 + chunks.length + stale.length) };
  }

  /** Deletes `keys` in atomic operations of at most MAX_MUTATIONS. */
  async #deleteAll(keys) {
    for (let i = 0; i < keys.length; i += MAX_MUTATIONS) {
      const op = this.#kv.atomic();
      for (const k of keys.slice(i, i + MAX_MUTATIONS)) op.delete(k);
      await op.commit();
    }
  }

  /** Writes a value too large for one atomic operation: chunks, then the entry, then the old chunks go. */
  async #putInSteps(key, value, old) {
    const gen = crypto.randomUUID();
    const chunks = split(value, CHUNK_BYTES);
    const written = chunks.map((_, i) => this.#chunkKey(key, gen, i));
    try {
      for (let i = 0; i < chunks.length; i += CHUNKS_PER_STEP) {
        const op = this.#kv.atomic();
        chunks.slice(i, i + CHUNKS_PER_STEP).forEach((chunk, j) => op.set(written[i + j], chunk));
        await op.commit();
      }
      const swap = await this.#kv.atomic()
        .check({ key: this.#entryKey(key), versionstamp: old.versionstamp })
        .set(this.#entryKey(key), { gen, chunks: chunks.length, size: value.length })
        .commit();
      if (!swap.ok) throw coded("CONFLICT", "another writer changed the store during the write");
    } catch (error) {
      await this.#deleteAll(written).catch(() => {});
      throw error;
    }
    await this.#deleteAll(this.#chunkKeys(key, old.entry));
  }

  async get(key) {
    return (await this.#read(key)).value;
  }

  async put(key, value) {
    try {
      await this.batch([{ type: "put", key, value }]);
    } catch (error) {
      if (error?.code !== "BATCH_TOO_LARGE") throw error;
      await this.#putInSteps(key, value, await this.#read(key));
    }
  }

  async delete(key) {
    try {
      await this.batch([{ type: "delete", key }]);
    } catch (error) {
      if (error?.code !== "BATCH_TOO_LARGE") throw error;
      // More chunks than one atomic operation deletes: the entry goes first
      // (the value is gone for readers), then its chunks in steps.
      const old = await this.#read(key);
      const gone = await this.#kv.atomic().check({ key: this.#entryKey(key), versionstamp: old.versionstamp }).delete(this.#entryKey(key)).commit();
      if (!gone.ok) throw coded("CONFLICT", "another writer changed the store during the delete");
      await this.#deleteAll(this.#chunkKeys(key, old.entry));
    }
  }

  async list(prefix) {
    const keys = [];
    const selector = { prefix: [...this.#ns, "k"], start: [...this.#ns, "k", prefix] };
    for await (const entry of this.#kv.list(selector)) {
      const key = entry.key.at(-1);
      if (!key.startsWith(prefix)) break; // keys are ordered: the prefix's run has ended
      keys.push(key);
    }
    return keys;
  }

  async batch(ops, expect) {
    checkOps(ops);
    const op = this.#kv.atomic();
    const read = new Map();
    if (expect) {
      const current = await this.#read(expect.key);
      if (!sameBytes(current.value, expect.value)) {
        throw coded("CONFLICT", `\`${expect.key}\` was changed by another writer`);
      }
      read.set(expect.key, current);
    }
    let mutations = 0;
    let bytes = 0;
    for (const { type, key, value } of ops) {
      const old = read.get(key) ?? await this.#read(key);
      read.set(key, old);
      const cost = this.#addWrite(op, key, type === "put" ? value : null, old);
      mutations += cost.mutations;
      bytes += cost.bytes;
    }
    // The expected key stands for the whole store (memtide changes it in
    // every write); without one each key read is checked, so a racing writer
    // of any of them makes the operation fail rather than leave another
    // generation's chunks behind.
    const checked = expect ? [expect.key] : [...read.keys()];
    if (mutations > MAX_MUTATIONS || bytes > MAX_MUTATION_BYTES || checked.length > MAX_CHECKS) {
      throw coded("BATCH_TOO_LARGE", `${mutations} mutations, ${bytes} bytes exceed one Deno KV atomic operation`);
    }
    for (const key of checked) op.check({ key: this.#entryKey(key), versionstamp: read.get(key).versionstamp });
    const result = await op.commit();
    if (!result.ok) throw coded("CONFLICT", "another writer changed the store during the write");
  }
}
