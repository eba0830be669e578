// A storage adapter over a Map for the tests of the npm package
// (`Memory.open({storage: adapter})`), with a switch that makes writes fail
// and, with `atomic`, an all-or-nothing `batch`.

/**
 * The adapter over `map`. Writes (`put`, `delete`, `batch`) are counted in
 * `writes`; the one numbered `failWritesFrom` (from 0) and every later one
 * throws `failWith()` instead of writing.
 */
export function mapAdapter({ atomic = false, map = new Map() } = {}) {
  const adapter = {
    map,
    writes: 0,
    failWritesFrom: Infinity,
    failWith: () => new Error("disk on fire"),
    write() {
      if (this.writes++ >= this.failWritesFrom) throw this.failWith();
    },
    async get(key) { return map.has(key) ? map.get(key).slice() : null; },
    async put(key, value) { this.write(); map.set(key, value.slice()); },
    async delete(key) { this.write(); map.delete(key); },
    async list(prefix) { return [...map.keys()].filter((k) => k.startsWith(prefix)); },
  };
  if (atomic) {
    adapter.batch = async (ops) => {
      adapter.write();
      for (const op of ops) op.type === "put" ? map.set(op.key, op.value.slice()) : map.delete(op.key);
    };
  }
  return adapter;
}

/** Every key and value of an adapter's map, comparable with `deepEqual`. */
export const snapshot = (map) => new Map([...map].map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
