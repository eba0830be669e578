// A memtide storage adapter over Deno KV (`Deno.openKv()`), safe with several
// writers (isolates, processes) on one database.
//
// Layout, under a namespace key prefix (default ["memtide"]):
//   [...ns, "k", key]     -> { chunks: n, size }  one entry per memtide key
//   [...ns, "c", key, i]  -> Uint8Array           chunk i (Deno KV values are
//                                                  limited to 64 KiB)
// A key's entries are always written in one atomic operation, so they share
// one versionstamp: a read that sees different versionstamps raced a writer
// and reads again.
//
// `batch(ops, expect)` is one atomic operation that checks the versionstamp
// of the expected key (memtide's manifest, which every write changes): a
// concurrent writer makes it fail with CONFLICT and memtide reloads and
// retries. A batch beyond Deno KV's limits of one atomic operation (1000
// mutations, 800 KiB) answers BATCH_TOO_LARGE and memtide journals it instead,
// which is safe for one writer at a time.

const CHUNK_BYTES = 60 * 1024;
const MAX_MUTATIONS = 1000;
const MAX_MUTATION_BYTES = 800 * 1024;
const READ_ATTEMPTS = 5;

function coded(code, message) {
  return Object.assign(new Error(message), { code });
}

function sameBytes(a, b) {
  if (a === null || b === null) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class DenoKvStorage {
  #kv;
  #ns;

  /** `kv` from `Deno.openKv()`; `namespace` separates several stores in one database. */
  constructor(kv, namespace = ["memtide"]) {
    this.#kv = kv;
    this.#ns = namespace;
  }

  #metaKey(key) { return [...this.#ns, "k", key]; }
  #chunkKey(key, i) { return [...this.#ns, "c", key, i]; }

  /** The value and the versionstamp of its entries (null, null when absent). */
  async #read(key) {
    for (let attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
      const meta = await this.#kv.get(this.#metaKey(key));
      if (meta.value === null) return { value: null, versionstamp: null, chunks: 0 };
      const keys = Array.from({ length: meta.value.chunks }, (_, i) => this.#chunkKey(key, i));
      const entries = [];
      for (let i = 0; i < keys.length; i += 10) entries.push(...await this.#kv.getMany(keys.slice(i, i + 10)));
      if (entries.every((e) => e.versionstamp === meta.versionstamp)) {
        const value = new Uint8Array(meta.value.size);
        let offset = 0;
        for (const entry of entries) {
          value.set(entry.value, offset);
          offset += entry.value.length;
        }
        return { value, versionstamp: meta.versionstamp, chunks: meta.value.chunks };
      }
    }
    throw new Error(`Deno KV: \`${key}\` kept changing while being read`);
  }

  /** Adds the mutations that set `key` to `value` (replacing `oldChunks` chunks) to `op`. */
  #addPut(op, key, value, oldChunks) {
    const chunks = Math.max(1, Math.ceil(value.length / CHUNK_BYTES));
    op.set(this.#metaKey(key), { chunks, size: value.length });
    for (let i = 0; i < chunks; i++) op.set(this.#chunkKey(key, i), value.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES));
    for (let i = chunks; i < oldChunks; i++) op.delete(this.#chunkKey(key, i));
    return { mutations: 1 + Math.max(chunks, oldChunks), bytes: value.length + 64 * (1 + chunks) };
  }

  #addDelete(op, key, oldChunks) {
    op.delete(this.#metaKey(key));
    for (let i = 0; i < oldChunks; i++) op.delete(this.#chunkKey(key, i));
    return { mutations: 1 + oldChunks, bytes: 64 * (1 + oldChunks) };
  }

  async get(key) {
    return (await this.#read(key)).value;
  }

  async put(key, value) {
    await this.batch([{ type: "put", key, value }]);
  }

  async delete(key) {
    await this.batch([{ type: "delete", key }]);
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
    const op = this.#kv.atomic();
    const checked = new Map();
    if (expect) {
      const current = await this.#read(expect.key);
      if (!sameBytes(current.value, expect.value)) {
        throw coded("CONFLICT", `\`${expect.key}\` was changed by another writer`);
      }
      op.check({ key: this.#metaKey(expect.key), versionstamp: current.versionstamp });
      checked.set(expect.key, current);
    }
    let mutations = 0;
    let bytes = 0;
    for (const { type, key, value } of ops) {
      // With the expectation checked, no other memtide write can land in
      // between, so the chunk counts read here stay true.
      let old = checked.get(key);
      if (!old) {
        old = await this.#read(key);
        // A lone write checks its own key, so a racing writer of the same key
        // cannot leave chunks of two versions behind.
        if (ops.length === 1) op.check({ key: this.#metaKey(key), versionstamp: old.versionstamp });
      }
      const cost = type === "put" ? this.#addPut(op, key, value, old.chunks) : this.#addDelete(op, key, old.chunks);
      mutations += cost.mutations;
      bytes += cost.bytes;
    }
    if (mutations > MAX_MUTATIONS || bytes > MAX_MUTATION_BYTES) {
      throw coded("BATCH_TOO_LARGE", `${mutations} mutations, ${bytes} bytes exceed one Deno KV atomic operation`);
    }
    const result = await op.commit();
    if (!result.ok) throw coded("CONFLICT", "another writer changed the store during the write");
  }
}
