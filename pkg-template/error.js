// The error class of memtide, in a module of its own so that code which
// only talks to a store in a worker (`memtide/worker`) does not load the
// WebAssembly glue to get it.

/** An error from memtide; `code` is stable, `message` says what to do. */
export class MemtideError extends Error {
  constructor(message, code) {
    super(message);
    this.name = "MemtideError";
    this.code = code;
  }
}
