import type { StorageAdapter } from "../index.js";

/**
 * memtide's storage in a directory (Node; Deno and Bun through `node:fs`):
 * one file per key, written to a flushed temporary file and renamed; `batch`
 * is atomic through a write-ahead file. One process at a time per directory.
 */
export class FsStorage implements StorageAdapter {
  /** `dir`: the store's directory, created when missing. */
  constructor(dir: string);
  get(key: string): Promise<Uint8Array | null>;
  put(key: string, value: Uint8Array): Promise<void>;
  delete(key: string): Promise<void>;
  list(prefix: string): Promise<string[]>;
  batch(
    ops: ({ type: "put"; key: string; value: Uint8Array } | { type: "delete"; key: string })[],
    expect?: { key: string; value: Uint8Array | null },
  ): Promise<void>;
}
