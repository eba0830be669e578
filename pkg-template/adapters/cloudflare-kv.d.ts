import type { StorageAdapter } from "../index.js";

/** The part of a Workers KV namespace binding the adapter uses. */
export interface KvNamespaceLike {
  get(key: string, type: "arrayBuffer"): Promise<ArrayBuffer | null>;
  put(key: string, value: Uint8Array): Promise<void>;
  delete(key: string): Promise<void>;
  list(options: { prefix: string; cursor?: string }): Promise<{ keys: { name: string }[]; list_complete: boolean; cursor?: string }>;
}

/**
 * memtide's storage in a Workers KV namespace. No `batch` (KV has no
 * transactions): memtide journals multi-key writes. KV is eventually
 * consistent and allows one write per second per key: one writer per store,
 * read-mostly. For a store per user, prefer `memtide/durable-object`.
 */
export class CloudflareKvStorage implements StorageAdapter {
  /** `prefix` separates stores in one namespace; prefix plus key must fit KV's 512 bytes. */
  constructor(kv: KvNamespaceLike, options?: { prefix?: string });
  get(key: string): Promise<Uint8Array | null>;
  put(key: string, value: Uint8Array): Promise<void>;
  delete(key: string): Promise<void>;
  list(prefix: string): Promise<string[]>;
}
