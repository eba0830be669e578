import type {
  Memory,
  ModelFiles,
  OpenOptions,
  ProgressOptions,
} from "./index.js";
import type { FetchModelOptions, FetchProgress } from "./model.js";

/** Model files, or where the worker fetches them (`fetchModel`'s URLs and sums). */
export type WorkerModel = ModelFiles | Omit<FetchModelOptions, "onProgress" | "signal" | "fetch" | "caches">;

/** Options of {@link WorkerMemory.open}: those of `Memory.open` that cross to a worker. */
export interface WorkerOpenOptions extends Pick<OpenOptions, "name" | "config" | "onProgress" | "onChange" | "signal"> {
  /** `"indexeddb"` (the default where the worker has `indexedDB`) or `"memory"`; adapters are opened in the worker's script. */
  storage?: "indexeddb" | "memory";
  /** Given as files, or as URLs the worker fetches the model from (one copy, in the worker). */
  model?: WorkerModel;
}

/** Options of the worker's `setModel`: progress of the download too. */
export interface WorkerModelOptions extends ProgressOptions {
  onDownload?: (progress: FetchProgress) => void;
}

/**
 * A store running in a worker, with the methods of `Memory`; errors keep
 * their `code` (`MemtideError`). Its `onChange` also fires when another
 * page on the same SharedWorker store writes. Where Web Locks exist, a call
 * pending when the worker dies (and any later call) rejects with
 * `WORKER_GONE`, and the worker lets go of what a page that closed or died
 * without `close()` held.
 */
export declare class WorkerMemory implements Omit<Memory, "setModel"> {
  private constructor();
  /** `worker`: a `Worker` or `SharedWorker` whose script calls {@link serve}. */
  static open(worker: Worker | SharedWorker, options?: WorkerOpenOptions): Promise<WorkerMemory>;
  setModel(model: WorkerModel, options?: WorkerModelOptions): Promise<number>;
  ingest: Memory["ingest"];
  ingestMessages: Memory["ingestMessages"];
  upsert: Memory["upsert"];
  getByKey: Memory["getByKey"];
  history: Memory["history"];
  applyOperations: Memory["applyOperations"];
  /** The extractor runs in the calling page; retrieval and the operations in the worker. */
  remember: Memory["remember"];
  retrieve: Memory["retrieve"];
  inject: Memory["inject"];
  get: Memory["get"];
  list: Memory["list"];
  update: Memory["update"];
  delete: Memory["delete"];
  deleteAll: Memory["deleteAll"];
  purgeExpired: Memory["purgeExpired"];
  summarize: Memory["summarize"];
  summaryContext: Memory["summaryContext"];
  storeSummary: Memory["storeSummary"];
  export: Memory["export"];
  import: Memory["import"];
  stats: Memory["stats"];
  syncFile: Memory["syncFile"];
  removeFile: Memory["removeFile"];
  file: Memory["file"];
  memoryTool: Memory["memoryTool"];
  renderHotFile: Memory["renderHotFile"];
  readHotFile: Memory["readHotFile"];
  refresh: Memory["refresh"];
  /** Closes this page's connection; the worker closes the store when its last page has. Resolves once the worker died, too. */
  close(): Promise<void>;
  /** Bytes of the worker's WebAssembly memory (its stores and the model). */
  wasmMemoryBytes(): Promise<number>;
}

/** Serves memtide stores to pages: call once in a dedicated worker's or a SharedWorker's script. */
export declare function serve(scope?: typeof globalThis): void;
