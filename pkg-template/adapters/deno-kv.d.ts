import type { StorageAdapter } from "../index.js";

/**
 * memtide's storage in Deno KV (`await Deno.openKv()`; `--unstable-kv` or
 * `"unstable": ["kv"]`). Values are split into 64 KiB chunks; `batch` is one
 * atomic operation checking the expectation's versionstamp, so several
 * writers on one database are safe. A value larger than one atomic operation
 * is written in steps; a write cut between them (a crash, a step that
 * throws) leaves the last committed value, and the next write erases what
 * it left.
 */
export class DenoKvStorage implements StorageAdapter {
  /**
   * `kv`: a `Deno.Kv` (typed `unknown` so these declarations need no Deno
   * types); `namespace`: the key prefix of this store in the database
   * (default `["memtide"]`).
   */
  constructor(kv: unknown, namespace?: (string | number | bigint | boolean | Uint8Array)[]);
  get(key: string): Promise<Uint8Array | null>;
  put(key: string, value: Uint8Array): Promise<void>;
  delete(key: string): Promise<void>;
  list(prefix: string): Promise<string[]>;
  batch(
    ops: ({ type: "put"; key: string; value: Uint8Array } | { type: "delete"; key: string })[],
    expect?: { key: string; value: Uint8Array | null },
  ): Promise<void>;
}
