import type { ModelFiles } from "./index.js";

/** Download progress of one file. */
export interface FetchProgress {
  url: string;
  loaded: number;
  /** From `content-length`, when the server sent it. */
  total?: number;
}

export interface FetchModelOptions {
  /** Where the host serves `model.onnx`. */
  onnxUrl: string | URL;
  /** Where the host serves `tokenizer.json`. */
  tokenizerUrl: string | URL;
  /** Cache API cache name (default `"mnemo-model-v1"`). */
  cacheName?: string;
  onProgress?: (progress: FetchProgress) => void;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /** Defaults to the global `caches`; without one nothing is cached. */
  caches?: CacheStorage;
}

/**
 * Fetches the model files with progress and caches them, so the second page
 * load does not download them again. Pass the result as `model` to
 * `Memory.open` or to `memory.setModel`.
 */
export function fetchModel(options: FetchModelOptions): Promise<ModelFiles & { tokenizer: string; onnx: Uint8Array; fromCache: boolean }>;
