import type { StorageAdapter } from "../index.js";

/** The part of a SQLite-backed Durable Object's `ctx.storage` the adapter uses. */
export interface SqliteDurableObjectStorageLike {
  sql: { exec(query: string, ...bindings: unknown[]): Iterable<Record<string, unknown>> & { toArray(): Record<string, unknown>[] } };
  transactionSync<T>(closure: () => T): T;
}

/** Bytes per row: values are split into parts this large (a row may hold 2 MB). */
export const PART_BYTES: number;

/**
 * memtide's storage in a SQLite-backed Durable Object (`ctx.storage`), in a
 * table of its own: values of any size (split into rows), and `batch` is one
 * transaction that checks the expectation. Strongly consistent; one object
 * per user is the recommended Worker deployment.
 */
export class DurableObjectSqlStorage implements StorageAdapter {
  /** `table` (default `"memtide"`) lets several stores share one object. */
  constructor(storage: SqliteDurableObjectStorageLike, options?: { table?: string });
  get(key: string): Uint8Array | null;
  put(key: string, value: Uint8Array): void;
  delete(key: string): void;
  list(prefix: string): string[];
  batch(
    ops: ({ type: "put"; key: string; value: Uint8Array } | { type: "delete"; key: string })[],
    expect?: { key: string; value: Uint8Array | null },
  ): void;
}
