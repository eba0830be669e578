// A memtide storage adapter over a Workers KV namespace binding.
//
// KV has no transactions, so this adapter has no `batch`: memtide journals
// every multi-key write (keys under `journal/`) and finishes or discards an
// interrupted one on the next open, which keeps one writer's writes whole.
// KV is eventually consistent between locations and has no compare-and-set:
// give each store one writer (for example one Durable Object per user, or
// one user per namespace prefix served from one place).
export class KvStorage {
  #kv;
  #prefix;

  /** `kv`: a KV namespace binding; `prefix` separates stores in one namespace. */
  constructor(kv, prefix = "") {
    this.#kv = kv;
    this.#prefix = prefix;
  }

  async get(key) {
    const value = await this.#kv.get(this.#prefix + key, "arrayBuffer");
    return value === null ? null : new Uint8Array(value);
  }

  async put(key, value) {
    await this.#kv.put(this.#prefix + key, value);
  }

  async delete(key) {
    await this.#kv.delete(this.#prefix + key);
  }

  async list(prefix) {
    const keys = [];
    let cursor;
    do {
      const page = await this.#kv.list({ prefix: this.#prefix + prefix, cursor });
      for (const { name } of page.keys) keys.push(name.slice(this.#prefix.length));
      cursor = page.list_complete ? undefined : page.cursor;
    } while (cursor);
    return keys;
  }
}
