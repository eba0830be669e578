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
// value (over about 780 KiB) is written in steps, and so that a process that
// dies (or a write that throws) between them leaves nothing behind, every
// generation that may end up unreferenced is first named by a mark:
//   [...ns, "g", gen]          -> { key, gen, chunks }
// The mark is written with the first chunks; one atomic operation then
// points the entry at the new generation (checking the entry's and the
// mark's versionstamps), deletes the new generation's mark and marks the old
// generation; the old chunks go, then their mark. Before each write the
// adapter collects every mark (none, unless a write was cut short): a marked
// generation the entry does not point at is erased, chunks first, mark last.
// So no bytes of a value that an interrupted write was writing, or that a
// completed one replaced, survive the next successful write. Collecting
// first rewrites the mark, which changes its versionstamp: a writer still
// writing that generation (another process; the stepwise path is for one
// writer at a time) fails its next step with CONFLICT instead of adding
// chunks behind the collector.
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
  /** Generations this adapter is writing in steps now: its collection leaves them alone. */
  #writing = new Set();

  /** `kv` from `Deno.openKv()`; `namespace` separates several stores in one database. */
  constructor(kv, namespace = ["memtide"]) {
    this.#kv = kv;
    this.#ns = namespace;
  }

  #entryKey(key) { return [...this.#ns, "k", key]; }
  #chunkKey(key, gen, i) { return [...this.#ns, "c", key, gen, i]; }
  #markKey(gen) { return [...this.#ns, "g", gen]; }
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

  /**
   * Settles the mark of generation `gen` (its value and versionstamp as read):
   * erases the generation unless its key's entry points at it, then deletes
   * the mark.
   */
  async #collect(gen, mark, versionstamp) {
    const { value: entry } = await this.#kv.get(this.#entryKey(mark.key));
    if (entry?.gen !== mark.gen) {
      // Rewriting the mark claims it: a writer of this generation checks the
      // mark's versionstamp at each step, so it stops before adding chunks
      // this would miss; a collector that lost the claim leaves it to the winner.
      const claim = await this.#kv.atomic().check({ key: this.#markKey(gen), versionstamp }).set(this.#markKey(gen), mark).commit();
      if (!claim.ok) return;
      await this.#deleteAll(this.#chunkKeys(mark.key, mark));
    }
    await this.#kv.delete(this.#markKey(gen));
  }

  /** Settles every mark but those of this adapter's own writes in progress. */
  async #collectAll() {
    for await (const { key, value, versionstamp } of this.#kv.list({ prefix: [...this.#ns, "g"] })) {
      const gen = key.at(-1);
      if (!this.#writing.has(gen)) await this.#collect(gen, value, versionstamp);
    }
  }

  /** Settles the mark of `gen` if there is one (the cleanup after a stepwise write). */
  async #collectOne(gen) {
    const { value, versionstamp } = await this.#kv.get(this.#markKey(gen));
    if (value !== null) await this.#collect(gen, value, versionstamp);
  }

  /**
   * Writes a value too large for one atomic operation: the new generation's
   * mark and chunks, then the entry (marking the old generation), then the
   * old chunks go.
   */
  async #putInSteps(key, value, old) {
    const gen = crypto.randomUUID();
    const chunks = split(value, CHUNK_BYTES);
    const mark = this.#markKey(gen);
    this.#writing.add(gen);
    try {
      let marked = null; // the mark's versionstamp, once written
      for (let i = 0; i < chunks.length; i += CHUNKS_PER_STEP) {
        const op = this.#kv.atomic().check({ key: mark, versionstamp: marked });
        if (marked === null) op.set(mark, { key, gen, chunks: chunks.length });
        chunks.slice(i, i + CHUNKS_PER_STEP).forEach((chunk, j) => op.set(this.#chunkKey(key, gen, i + j), chunk));
        const step = await op.commit();
        if (!step.ok) throw coded("CONFLICT", "another writer collected this write's chunks");
        marked ??= step.versionstamp;
      }
      const swap = this.#kv.atomic()
        .check({ key: this.#entryKey(key), versionstamp: old.versionstamp })
        .check({ key: mark, versionstamp: marked })
        .set(this.#entryKey(key), { gen, chunks: chunks.length, size: value.length })
        .delete(mark);
      if (old.entry) swap.set(this.#markKey(old.entry.gen), { key, gen: old.entry.gen, chunks: old.entry.chunks });
      if (!(await swap.commit()).ok) throw coded("CONFLICT", "another writer changed the store during the write");
    } catch (error) {
      // Erases what was written, unless the swap did land (a commit can throw
      // after applying); what this cannot do, the next write's collection does.
      await this.#collectOne(gen).catch(() => {});
      throw error;
    } finally {
      this.#writing.delete(gen);
    }
    // The value is written: the old generation is marked, so a failure to
    // erase it now is finished by the next write's collection, not reported.
    if (old.entry) await this.#collectOne(old.entry.gen).catch(() => {});
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
      // More chunks than one atomic operation deletes: the entry goes first,
      // with a mark on its generation (the value is gone for readers), then
      // the chunks and the mark; a collection finishes a delete cut short.
      const old = await this.#read(key);
      if (old.entry === null) return; // deleted meanwhile
      const gone = await this.#kv.atomic()
        .check({ key: this.#entryKey(key), versionstamp: old.versionstamp })
        .delete(this.#entryKey(key))
        .set(this.#markKey(old.entry.gen), { key, gen: old.entry.gen, chunks: old.entry.chunks })
        .commit();
      if (!gone.ok) throw coded("CONFLICT", "another writer changed the store during the delete");
      await this.#collectOne(old.entry.gen).catch(() => {});
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
    await this.#collectAll();
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
