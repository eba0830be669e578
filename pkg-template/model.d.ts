import type { ModelFiles } from "./index.js";

/** Download progress of one file. */
export interface FetchProgress {
  url: string;
  loaded: number;
  /** From `content-length`, when the server sent it. */
  total?: number;
}

/** One file of the model: its name, size in bytes and sha256 (hex). */
export interface ModelFile {
  readonly name: string;
  readonly bytes: number;
  readonly sha256: string;
}

/** The files memtide's model is made of, as the repository pins them. */
export declare const modelFiles: {
  readonly onnx: ModelFile;
  readonly tokenizer: ModelFile;
};

export interface FetchModelOptions {
  /** The folder (URL) holding `model.onnx` and `tokenizer.json`; or give both URLs. */
  baseUrl?: string | URL;
  /** Where the host serves `model.onnx` (default `baseUrl` + `model.onnx`). */
  onnxUrl?: string | URL;
  /** Where the host serves `tokenizer.json` (default `baseUrl` + `tokenizer.json`). */
  tokenizerUrl?: string | URL;
  /** The sha256 `model.onnx` must have (default `modelFiles.onnx.sha256`); `null` does not check. */
  onnxSha256?: string | null;
  /** The sha256 `tokenizer.json` must have (default `modelFiles.tokenizer.sha256`); `null` does not check. */
  tokenizerSha256?: string | null;
  /** Cache API cache name (default `"mnemo-model-v1"`). */
  cacheName?: string;
  onProgress?: (progress: FetchProgress) => void;
  /** Stops the download: the promise rejects with `code: "ABORTED"`. */
  signal?: AbortSignal;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /** Defaults to the global `caches`; without one nothing is cached. */
  caches?: CacheStorage;
}

/**
 * Fetches the model files with progress, checks their sha256 and caches
 * them, so the second page load does not download them again; a cached copy
 * with a wrong sha256 is evicted and fetched again. Fails with `code:
 * "MODEL"` (HTTP error, wrong sha256), `"ABORTED"` or `"INVALID_INPUT"`.
 * Pass the result as `model` to `Memory.open` or to `memory.setModel`.
 */
export function fetchModel(options: FetchModelOptions): Promise<ModelFiles & { tokenizer: string; onnx: Uint8Array; fromCache: boolean }>;
