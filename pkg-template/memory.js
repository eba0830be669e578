// The typed JavaScript API of memtide: a thin class over the WebAssembly
// `MemoryCore`. Every method forwards to the core; this file only picks
// defaults (which storage) and gives errors their class.
import { MemoryCore, setErrorClass, wasmMemoryBytes } from "./wasm/memtide.js";

export { wasmMemoryBytes };

/** An error from memtide; `code` is stable, `message` says what to do. */
export class MemtideError extends Error {
  constructor(message, code) {
    super(message);
    this.name = "MemtideError";
    this.code = code;
  }
}

const opening = Symbol("opening");

/** A memory store. Create one with `await Memory.open(options)`. */
export class Memory {
  #core;

  constructor(token, core) {
    if (token !== opening) {
      throw new MemtideError("use `await Memory.open(options)` to create a Memory", "INVALID_INPUT");
    }
    this.#core = core;
  }

  static async open(options = {}) {
    setErrorClass(MemtideError);
    if (options === null || typeof options !== "object") {
      throw new MemtideError("invalid input: options must be an object", "INVALID_INPUT");
    }
    const core = await MemoryCore.open(options);
    return new Memory(opening, core);
  }

  setModel(model) { return this.#core.setModel(model); }
  ingest(input) { return this.#core.ingest(input); }
  retrieve(query) { return this.#core.retrieve(query); }
  inject(query) { return this.#core.inject(query); }
  get(id) { return this.#core.get(id); }
  list(query) { return this.#core.list(query); }
  update(id, patch) { return this.#core.update(id, patch); }
  delete(id, options) { return this.#core.delete(id, options); }
  deleteAll(options) { return this.#core.deleteAll(options); }
  export(filter) { return this.#core.export(filter); }
  import(data) { return this.#core.import(data); }
  stats(filter) { return this.#core.stats(filter); }
  syncFile(file) { return this.#core.syncFile(file); }
  removeFile(file) { return this.#core.removeFile(file); }
  file(file) { return this.#core.file(file); }
  memoryTool(scope, input) { return this.#core.memoryTool(scope, input); }
  renderHotFile(scope, document) { return this.#core.renderHotFile(scope, document); }
  readHotFile(file) { return this.#core.readHotFile(file); }
  refresh() { return this.#core.refresh(); }
  close() { return this.#core.close(); }
}
