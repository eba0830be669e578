// A memtide storage adapter over a Workers KV namespace binding (`env.KV`).
//
// KV fits one writer and mostly reads: it is eventually consistent (a write
// can take 60 seconds or more to be seen from other locations), allows one
// write per second to a key, and has no transactions or compare-and-set
// (https://developers.cloudflare.com/kv/platform/limits/). So this adapter has
// no `batch`: memtide journals every multi-key write (keys under `journal/`)
// and finishes or discards an interrupted one on the next open, which keeps
// one writer's writes whole. Give each store one writer; for a store per
// user written from anywhere, use a Durable Object (`memtide/durable-object`).
//
// KV keys are at most 512 bytes, the longest key memtide writes: a `prefix`
// takes its bytes from that budget, and a key that no longer fits is refused.
const MAX_KEY_BYTES = 512;
const encoder = new TextEncoder();

export class CloudflareKvStorage {
  #kv;
  #prefix;

  /** `kv`: a KV namespace binding; `prefix` separates stores in one namespace. */
  constructor(kv, { prefix = "" } = {}) {
    this.#kv = kv;
    this.#prefix = prefix;
  }

  #key(key) {
    const full = this.#prefix + key;
    if (encoder.encode(full).length > MAX_KEY_BYTES) {
      throw new Error(`Workers KV: key \`${full}\` is over KV's ${MAX_KEY_BYTES} bytes (shorten the prefix)`);
    }
    return full;
  }

  async get(key) {
    const value = await this.#kv.get(this.#key(key), "arrayBuffer");
    return value === null ? null : new Uint8Array(value);
  }

  async put(key, value) {
    await this.#kv.put(this.#key(key), value);
  }

  async delete(key) {
    await this.#kv.delete(this.#key(key));
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
