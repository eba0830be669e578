// The typed JavaScript API of memtide: a thin class over the WebAssembly
// `MemoryCore`. Every method forwards to the core; this file only starts the
// WebAssembly modules, picks defaults (which storage) and gives errors their
// class.
//
// The package has two WebAssembly modules: the core (engine, indexes,
// storage) and the model (MiniLM on tract, about 60 % of the code), which
// starts only when an app gives a model (`model` on open, `setModel`), so
// that a lexical-only app neither downloads nor compiles it. The core calls
// the model through `loadModel` below, which it is handed on each call that
// may need it.
//
// No module of the package does anything when imported: the WebAssembly
// modules start in the first `Memory.open` (or `init`). A top-level `await`
// would be refused by `require()` and older build targets, and a start-up
// statement in an entry file is dropped by bundlers that find no export of
// it used (`"sideEffects": false`).
import initWasm, { MemoryCore, setErrorClass, setJsonReplacer, wasmMemoryBytes as coreMemoryBytes } from "./wasm/memtide.js";
import initModelWasm, { ModelCore, wasmMemoryBytes as modelMemoryBytes } from "./wasm/memtide_model.js";
import { MemtideError } from "./error.js";
import { rememberWith } from "./remember.js";
import { summarize } from "./summarize.js";

export { MemtideError };

// One instance of each WebAssembly module per JavaScript realm, shared by
// every store.
let started;
let ready = false;
let modelStarted;
let modelReady = false;
// Where the model module comes from when an `init`/`open` said (`modelWasm`).
let modelWasmGiven;

/**
 * The replacer every value handed to the core is serialized with: JSON
 * would write `NaN` and infinities as `null`, which the core reads as
 * "absent", so they are refused (the core reports `INVALID_INPUT`).
 */
function finiteNumbers(_key, value) {
  if (typeof value === "number" && !Number.isFinite(value)) {
    throw new TypeError(`${value} is not a finite number`);
  }
  return value;
}

/**
 * Starts the core module once. `wasm` (a URL, a `Response`, a
 * `WebAssembly.Module` or the bytes) overrides the entry's `defaultWasm()`,
 * which knows where its runtime finds the file. A failed start is forgotten,
 * so a later call may try again (say, with another `wasm`).
 */
function start(wasm, defaultWasm) {
  started ??= (async () => {
    await initWasm({ module_or_path: await (wasm ?? defaultWasm()) });
    setErrorClass(MemtideError);
    setJsonReplacer(finiteNumbers);
    ready = true;
  })().catch((error) => {
    started = undefined;
    throw error;
  });
  return started;
}

/**
 * Starts the model module once, like `start`; its failure is a `MODEL`
 * error. (The model module's own errors carry the engine's `code`; the core
 * turns them into `MemtideError`s.)
 */
function startModel(defaultModelWasm) {
  modelStarted ??= (async () => {
    await initModelWasm({ module_or_path: await (modelWasmGiven ?? defaultModelWasm()) });
    modelReady = true;
  })().catch((error) => {
    modelStarted = undefined;
    throw new MemtideError(`model error: cannot start the model's WebAssembly module: ${error?.message ?? error}`, "MODEL");
  });
  return modelStarted;
}

/**
 * Bytes of the linear memories of memtide's WebAssembly instances (the
 * core's, and the model's once it has started); 0 before any has started.
 */
export function wasmMemoryBytes() {
  return (ready ? coreMemoryBytes() : 0) + (modelReady ? modelMemoryBytes() : 0);
}

const opening = Symbol("opening");

/**
 * The API of one entry point: `defaultWasm` and `defaultModelWasm` return
 * (or resolve to) what its runtime loads the core and the model modules
 * from.
 */
export function entry(defaultWasm, defaultModelWasm) {
  async function init(options = {}) {
    if (options === null || typeof options !== "object") {
      throw new MemtideError("invalid input: options must be an object", "INVALID_INPUT");
    }
    if (options.modelWasm !== undefined) modelWasmGiven = options.modelWasm;
    await start(options.wasm, defaultWasm);
  }

  // The core's loader of a model (crates/js/src/model.rs): the files,
  // checked by the core, into the model module.
  async function loadModel(onnx, tokenizer) {
    await startModel(defaultModelWasm);
    return ModelCore.load(onnx, tokenizer);
  }

  /** A memory store. Create one with `await Memory.open(options)`. */
  class Memory {
    #core;

    constructor(token, core) {
      if (token !== opening) {
        throw new MemtideError("use `await Memory.open(options)` to create a Memory", "INVALID_INPUT");
      }
      this.#core = core;
    }

    static async open(options = {}) {
      const starting = init(options);
      // With a model, its module compiles while the core starts and the
      // store opens; a failure shows when the core loads the model.
      if (options?.model != null) startModel(defaultModelWasm).catch(() => {});
      await starting;
      const core = await MemoryCore.open(options, loadModel);
      return new Memory(opening, core);
    }

    setModel(model, options) { return this.#core.setModel(model, options, loadModel); }
    ingest(input, options) { return this.#core.ingest(input, options); }
    upsert(input) { return this.#core.upsert(input); }
    getByKey(options) { return this.#core.getByKey(options); }
    history(id) { return this.#core.history(id); }
    applyOperations(options) { return this.#core.applyOperations(options); }
    remember(messages, options) { return rememberWith(this, messages, options); }
    ingestMessages(messages, options) { return this.#core.ingestMessages(messages, options); }
    retrieve(query) { return this.#core.retrieve(query); }
    inject(query) { return this.#core.inject(query); }
    get(id) { return this.#core.get(id); }
    list(query) { return this.#core.list(query); }
    update(id, patch) { return this.#core.update(id, patch); }
    delete(id, options) { return this.#core.delete(id, options); }
    deleteAll(options) { return this.#core.deleteAll(options); }
    purgeExpired() { return this.#core.purgeExpired(); }
    summaryContext(query) { return this.#core.summaryContext(query); }
    storeSummary(input) { return this.#core.storeSummary(input); }
    summarize(options) { return summarize(this.#core, options); }
    export(filter) { return this.#core.export(filter); }
    import(data, options) { return this.#core.import(data, options); }
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

  return { Memory, init };
}
