// A memtide store in a dedicated worker or a SharedWorker, behind the
// promise API of `Memory`: the page never blocks on embedding or storage,
// and with a SharedWorker the tabs of one origin share one store and one
// copy of the model.
//
// The worker's script calls `serve()`; a page calls
// `WorkerMemory.open(worker, options)`. Each opened store talks over a
// MessagePort of its own (transferred in a `{ memtide: "connect" }`
// message), with messages
//
//   page -> worker  { id, method, args, observe?: { progress, signal } }
//                   { abort: id, reason }
//   worker -> page  { id, result } | { id, error: { code, message } }
//                   { id, progress }            onProgress of the call
//                   { id, download }            fetchModel's progress
//                   { event: "change" }         another page or tab wrote
//                   { event: "held" }           the worker holds its lock
//
// Each side learns when the other dies through Web Locks (where
// `navigator.locks` exists): the connect message names two locks of the
// connection. The page holds the page lock from before it connects until it
// has closed; the worker asks for it, and is granted it when the page closed
// or died, and then releases what the page held. The worker holds the
// worker lock until then and says so (`held`); the page asks for it, and is
// granted it only when the worker died (crashed, was terminated), since it
// stops asking before it lets go of the page lock: its pending calls, and
// any later, reject with `WORKER_GONE`.
//
// The worker keeps one store per storage and name, whichever page opened it
// first; every page on it is told of the others' writes (`onChange`).
import { Memory, wasmMemoryBytes } from "./browser.js";
import { MemtideError } from "./error.js";
import { fetchModel } from "./model.js";
import { rememberWith } from "./remember.js";
import { summarize } from "./summarize.js";

/** The calls a page may make, and those that change the store. */
const READS = ["retrieve", "inject", "get", "getByKey", "history", "list", "export", "stats", "file",
  "renderHotFile", "refresh", "summaryContext"];
const WRITES = ["setModel", "ingest", "ingestMessages", "upsert", "update", "delete", "deleteAll",
  "purgeExpired", "import", "syncFile", "removeFile", "memoryTool", "readHotFile", "applyOperations", "storeSummary"];
/** The calls whose last argument is `{ onProgress, signal }`, by its index. */
const OBSERVED = { ingest: 1, import: 1, setModel: 1 };

const invalid = (message) => new MemtideError(`invalid input: ${message}`, "INVALID_INPUT");

// ----- the page's side ----------------------------------------------------------------

const opening = Symbol("opening");

const gone = () => new MemtideError(
  "the worker serving this store is gone (it crashed or was terminated); a write it was making may or may not have landed: open the store again",
  "WORKER_GONE");

class Connection {
  #port;
  #calls = new Map();
  #next = 1;
  #closed = false;
  /** The error every call rejects with once the worker died. */
  #gone = null;
  #locks;
  /** Stops the page's wait for the worker lock (once closed: the worker then lets go of it). */
  #unwatch = new AbortController();
  #releasePage = () => {};

  /** `locks`: the connection's lock names, `{ page, worker }` (undefined: no Web Locks). */
  constructor(port, onChange, locks) {
    this.#port = port;
    this.#locks = locks;
    port.onmessage = ({ data }) => {
      if (data.event === "change") {
        onChange?.();
        return;
      }
      if (data.event === "held") {
        this.#watchWorker();
        return;
      }
      const call = this.#calls.get(data.id);
      if (!call) return;
      if ("progress" in data) call.onProgress?.(data.progress);
      else if ("download" in data) call.onDownload?.(data.download);
      else {
        this.#calls.delete(data.id);
        call.signal?.removeEventListener("abort", call.abort);
        if (data.error) call.reject(new MemtideError(data.error.message, data.error.code));
        else call.resolve(data.result);
      }
    };
  }

  /** Holds the page lock until this connection closes; resolves once it is held. */
  holdPageLock() {
    if (!this.#locks) return Promise.resolve();
    const held = new Promise((release) => { this.#releasePage = release; });
    return new Promise((granted, refused) => {
      navigator.locks.request(this.#locks.page, () => {
        granted();
        return held;
      }).catch(refused);
    });
  }

  /** Waits for the worker lock: granted only when the worker let go of it by dying. */
  #watchWorker() {
    if (!this.#locks) return;
    navigator.locks.request(this.#locks.worker, { signal: this.#unwatch.signal }, () => {
      this.#gone = gone();
      this.fail(this.#gone);
      this.#releasePage();
    }).catch(() => {}); // aborted by close()
  }

  call(method, args, { onProgress, onDownload, signal } = {}) {
    if (this.#closed) return Promise.reject(new MemtideError("the memory store is closed", "CLOSED"));
    if (this.#gone) return Promise.reject(this.#gone);
    if (signal?.aborted) return Promise.reject(aborted(signal));
    return new Promise((resolve, reject) => {
      const id = this.#next++;
      const abort = () => this.#port.postMessage({ abort: id, reason: reasonText(signal) });
      this.#calls.set(id, { resolve, reject, onProgress, onDownload, signal, abort });
      signal?.addEventListener("abort", abort, { once: true });
      const observe = { progress: Boolean(onProgress), download: Boolean(onDownload), signal: Boolean(signal) };
      try {
        this.#port.postMessage({ id, method, args, observe });
      } catch (error) {
        // A value structured clone refuses (a function, a class instance).
        this.#calls.delete(id);
        reject(invalid(`cannot send ${method}'s arguments to the worker: ${error?.message ?? error}`));
      }
    });
  }

  /** Rejects every pending call with `error` (the worker failed). */
  fail(error) {
    for (const call of this.#calls.values()) call.reject(error);
    this.#calls.clear();
  }

  /** Ends a connection whose store did not open: the worker, granted the page lock, lets go of it too. */
  discard() {
    this.#closed = true;
    this.#unwatch.abort();
    this.#releasePage();
    this.#port.close();
  }

  async close() {
    if (this.#closed) return;
    try {
      await this.call("close", []);
    } catch (error) {
      if (error?.code !== "WORKER_GONE") throw error; // a worker that died holds nothing to close
    }
    this.#closed = true;
    // In this order: the worker lets go of its lock once granted the page's.
    this.#unwatch.abort();
    this.#releasePage();
    this.#port.close();
  }
}

function reasonText(signal) {
  const reason = signal?.reason;
  return reason === undefined ? "" : String(reason?.message ?? reason);
}

function aborted(signal) {
  const why = reasonText(signal);
  return new MemtideError(`aborted: the call was aborted${why ? ` (${why})` : ""}`, "ABORTED");
}

/** Splits `{ onProgress, signal, onDownload }` off the options argument of an observed call. */
function observedArgs(method, args) {
  const at = OBSERVED[method];
  if (at === undefined || args[at] === undefined) return { args, observe: {} };
  const options = args[at];
  if (options === null || typeof options !== "object") throw invalid("options must be an object");
  const { onProgress, onDownload, signal, ...rest } = options;
  if (Object.keys(rest).length > 0) throw invalid(`unknown options ${Object.keys(rest).join(", ")}`);
  if (onProgress !== undefined && typeof onProgress !== "function") throw invalid("onProgress must be a function");
  if (onDownload !== undefined && typeof onDownload !== "function") throw invalid("onDownload must be a function");
  if (signal !== undefined && typeof signal?.aborted !== "boolean") throw invalid("signal must be an AbortSignal");
  const copy = args.slice();
  copy[at] = {};
  return { args: copy, observe: { onProgress, onDownload, signal } };
}

/**
 * A memory store running in a worker, with the methods of `Memory`. Open
 * one with `await WorkerMemory.open(worker, options)`.
 */
export class WorkerMemory {
  #connection;

  constructor(token, connection) {
    if (token !== opening) throw invalid("use `await WorkerMemory.open(worker, options)`");
    this.#connection = connection;
  }

  /**
   * Opens the store in `worker` (a `Worker` or a `SharedWorker` whose
   * script calls `serve()`). `options` are those of `Memory.open` that
   * cross to a worker: `storage` (`"indexeddb"` or `"memory"`), `name`,
   * `config`, `model` (the files, or `{ baseUrl }`/`{ onnxUrl,
   * tokenizerUrl }` for the worker to fetch with `fetchModel`), and the
   * page's `onProgress`, `onChange`, `signal`.
   */
  static async open(worker, options = {}) {
    if (options === null || typeof options !== "object") throw invalid("options must be an object");
    const { onProgress, onChange, signal, ...rest } = options;
    if (typeof rest.storage === "object" && rest.storage !== null) {
      throw invalid("a storage adapter cannot cross to a worker: open it in the worker's script");
    }
    if (rest.now !== undefined) throw invalid("now cannot cross to a worker");
    if (onChange !== undefined && typeof onChange !== "function") throw invalid("onChange must be a function");
    const endpoint = worker?.port ?? worker;
    if (typeof endpoint?.postMessage !== "function") throw invalid("worker must be a Worker or a SharedWorker");
    const channel = new MessageChannel();
    // Web Locks (and randomUUID) exist in secure contexts only; without them neither side notices the other's death.
    const id = globalThis.navigator?.locks ? crypto.randomUUID() : undefined;
    const locks = id && { page: `memtide:page:${id}`, worker: `memtide:worker:${id}` };
    const connection = new Connection(channel.port1, onChange, locks);
    await connection.holdPageLock();
    // A script that fails to load or throws never answers: fail the open.
    const failed = (event) => connection.fail(new MemtideError(
      `the worker failed: ${event?.message || "its script did not load"}`, "STORAGE"));
    worker.addEventListener?.("error", failed);
    endpoint.postMessage({ memtide: "connect", port: channel.port2, locks }, [channel.port2]);
    try {
      await connection.call("open", [rest], { onProgress, signal });
    } catch (error) {
      connection.discard();
      throw error;
    } finally {
      worker.removeEventListener?.("error", failed);
    }
    return new WorkerMemory(opening, connection);
  }

  #call(method, args) {
    let call;
    try {
      call = observedArgs(method, args);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#connection.call(method, call.args, call.observe);
  }

  setModel(model, options) { return this.#call("setModel", [model, options]); }
  ingest(input, options) { return this.#call("ingest", [input, options]); }
  ingestMessages(messages, options) { return this.#call("ingestMessages", [messages, options]); }
  upsert(input) { return this.#call("upsert", [input]); }
  getByKey(options) { return this.#call("getByKey", [options]); }
  history(id) { return this.#call("history", [id]); }
  applyOperations(options) { return this.#call("applyOperations", [options]); }
  /** Runs the extractor in this page; retrieval and the operations run in the worker. */
  remember(messages, options) { return rememberWith(this, messages, options); }
  retrieve(query) { return this.#call("retrieve", [query]); }
  inject(query) { return this.#call("inject", [query]); }
  get(id) { return this.#call("get", [id]); }
  list(query) { return this.#call("list", [query]); }
  update(id, patch) { return this.#call("update", [id, patch]); }
  delete(id, options) { return this.#call("delete", [id, options]); }
  deleteAll(options) { return this.#call("deleteAll", [options]); }
  purgeExpired() { return this.#call("purgeExpired", []); }
  summaryContext(query) { return this.#call("summaryContext", [query]); }
  storeSummary(input) { return this.#call("storeSummary", [input]); }
  /** The summarizer runs in the page (a function does not cross to the worker); the store's two calls do. */
  summarize(options) { return summarize(this, options); }
  export(filter) { return this.#call("export", [filter]); }
  import(data, options) { return this.#call("import", [data, options]); }
  stats(filter) { return this.#call("stats", [filter]); }
  syncFile(file) { return this.#call("syncFile", [file]); }
  removeFile(file) { return this.#call("removeFile", [file]); }
  file(file) { return this.#call("file", [file]); }
  memoryTool(scope, input) { return this.#call("memoryTool", [scope, input]); }
  renderHotFile(scope, document) { return this.#call("renderHotFile", [scope, document]); }
  readHotFile(file) { return this.#call("readHotFile", [file]); }
  refresh() { return this.#call("refresh", []); }
  /** Bytes of the worker's WebAssembly memory (its memtide data and model). */
  wasmMemoryBytes() { return this.#connection.call("wasmMemoryBytes", []); }
  /** Closes this page's connection; the worker closes the store when its last page has. */
  close() { return this.#connection.close(); }
}

// ----- the worker's side -------------------------------------------------------------

/** The open stores by storage and name: `{ memory: Promise<Memory>, ports: Set }`. */
const stores = new Map();

/** Model files, fetched in the worker when given as `{ baseUrl }` or URLs. */
function modelFiles(model, port, id, observe, signal) {
  if (model === undefined || model === null || model.onnx !== undefined) return model;
  const onProgress = observe?.download ? (download) => port.postMessage({ id, download }) : undefined;
  return fetchModel({ ...model, onProgress, signal });
}

async function openStore(port, id, options, observe, signal) {
  const storage = options.storage ?? (globalThis.indexedDB ? "indexeddb" : "memory");
  const key = JSON.stringify([storage, options.name ?? "mnemo"]);
  let entry = stores.get(key);
  if (!entry) {
    const ports = new Set();
    const memory = (async () => Memory.open({
      ...options,
      storage,
      model: await modelFiles(options.model, port, id, observe, signal),
      signal,
      onProgress: observe?.progress ? (progress) => port.postMessage({ id, progress }) : undefined,
      // Another worker or tab wrote to the same database.
      onChange: () => ports.forEach((p) => p.postMessage({ event: "change" })),
    }))();
    entry = { memory, ports };
    stores.set(key, entry);
    memory.catch(() => stores.delete(key));
  }
  const memory = await entry.memory;
  if (options.model && (await memory.stats()).model == null) {
    await memory.setModel(await modelFiles(options.model, port, id, observe, signal), { signal });
  }
  entry.ports.add(port);
  return { entry, key };
}

/** `locks`: the connection's lock names from the page, `{ page, worker }`, or undefined. */
function serveConnection(port, locks) {
  let opened;
  let left = false;
  const controllers = new Map();
  /** This page's part of its store ends: the store closes when no page is left on it. */
  const leave = async () => {
    left = true;
    if (!opened) return;
    const { entry, key } = opened;
    opened = undefined;
    entry.ports.delete(port);
    if (entry.ports.size === 0 && stores.get(key) === entry) {
      stores.delete(key);
      await (await entry.memory).close();
    }
  };
  if (locks && globalThis.navigator?.locks) {
    let releaseWorker;
    const held = new Promise((release) => { releaseWorker = release; });
    navigator.locks.request(locks.worker, () => {
      port.postMessage({ event: "held" });
      return held;
    }).catch(() => {});
    // Granted when the page closed, or died without closing: its calls stop,
    // its store is let go, and then (the page no longer asks) the worker lock.
    navigator.locks.request(locks.page, async () => {
      for (const controller of controllers.values()) controller.abort(new Error("the page is gone"));
      port.close();
      try {
        await leave();
      } finally {
        releaseWorker();
      }
    }).catch(() => {});
  }
  const call = async ({ id, method, args, observe }) => {
    const controller = new AbortController();
    controllers.set(id, controller);
    if (method === "open") {
      if (left) throw new MemtideError("the memory store is closed", "CLOSED");
      opened = await openStore(port, id, args[0] ?? {}, observe, controller.signal);
      if (left) await leave(); // the page went while its store opened
      return undefined;
    }
    if (method === "wasmMemoryBytes") return wasmMemoryBytes();
    if (!opened) throw new MemtideError("the memory store is closed", "CLOSED");
    if (method === "close") {
      await leave();
      return undefined;
    }
    if (!READS.includes(method) && !WRITES.includes(method)) throw invalid(`unknown method ${method}`);
    const memory = await opened.entry.memory;
    const at = OBSERVED[method];
    if (at !== undefined && observe && (observe.progress || observe.signal || observe.download)) {
      args[at] = {
        signal: controller.signal,
        onProgress: observe.progress ? (progress) => port.postMessage({ id, progress }) : undefined,
      };
    }
    if (method === "setModel") args[0] = await modelFiles(args[0], port, id, observe, controller.signal);
    const result = await memory[method](...args);
    if (WRITES.includes(method)) {
      for (const other of opened.entry.ports) if (other !== port) other.postMessage({ event: "change" });
    }
    return result;
  };
  port.onmessage = async ({ data }) => {
    if (data.abort !== undefined) {
      controllers.get(data.abort)?.abort(new Error(data.reason || "aborted by the page"));
      return;
    }
    try {
      port.postMessage({ id: data.id, result: await call(data) });
    } catch (error) {
      port.postMessage({ id: data.id, error: { code: error?.code ?? "INTERNAL", message: String(error?.message ?? error) } });
    } finally {
      controllers.delete(data.id);
    }
  };
}

/**
 * Serves memtide stores to the pages of this worker: call it once in a
 * dedicated worker's or a SharedWorker's script.
 */
export function serve(scope = globalThis) {
  const listen = (endpoint) => {
    endpoint.addEventListener("message", ({ data, ports }) => {
      if (data?.memtide === "connect") serveConnection(data.port ?? ports[0], data.locks);
    });
    endpoint.start?.();
  };
  if ("onconnect" in scope) scope.addEventListener("connect", (event) => listen(event.ports[0]));
  else listen(scope);
}
