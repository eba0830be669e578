// Fetching the model files with progress, checked against their sha256 and
// cached so later page loads do not download them again. memtide never
// fetches a model by itself: the host says where its copy of the files
// lives.

/**
 * The files of the model memtide is built for (int8 all-MiniLM-L6-v2), as
 * `scripts/fetch-model.sh` in the repository pins them: a host serves
 * these two files, and `fetchModel` checks what it gets against `sha256`.
 */
export const modelFiles = Object.freeze({
  onnx: Object.freeze({
    name: "model.onnx",
    bytes: 22928619,
    sha256: "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
  }),
  tokenizer: Object.freeze({
    name: "tokenizer.json",
    bytes: 466247,
    sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
  }),
});

function modelError(message, code = "MODEL") {
  const error = new Error(message);
  error.code = code;
  return error;
}

async function readWithProgress(response, url, onProgress) {
  const total = Number(response.headers.get("content-length")) || undefined;
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onProgress?.({ url, loaded: bytes.length, total: bytes.length });
    return bytes;
  }
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.length;
    onProgress?.({ url, loaded, total });
  }
  const bytes = new Uint8Array(loaded);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

async function sha256Hex(bytes) {
  const subtle = globalThis.crypto?.subtle;
  if (!subtle) {
    // Browsers give `crypto.subtle` to secure contexts only (https, localhost).
    throw modelError("cannot check the model's sha256: crypto.subtle is missing (serve the page over https)");
  }
  const digest = new Uint8Array(await subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

// The bytes of `url`, from the cache when it holds a copy whose sha256 is
// `sha256` (a copy that is not is evicted), else from the network, checked
// and then cached.
async function fetchOne(url, sha256, { cache, fetch, onProgress, signal }) {
  const cached = cache ? await cache.match(url) : undefined;
  if (cached) {
    const bytes = await readWithProgress(cached, url, onProgress);
    if (sha256 === null || await sha256Hex(bytes) === sha256) return { bytes, fromCache: true };
    await cache.delete(url);
  }
  let response;
  try {
    response = await fetch(url, { signal });
  } catch (error) {
    if (signal?.aborted) throw modelError(`fetching ${url} was aborted`, "ABORTED");
    throw modelError(`fetching ${url} failed: ${error?.message ?? error}`);
  }
  if (!response.ok) throw modelError(`fetching ${url} failed: HTTP ${response.status}`);
  let bytes;
  try {
    bytes = await readWithProgress(response, url, onProgress);
  } catch (error) {
    if (signal?.aborted) throw modelError(`fetching ${url} was aborted`, "ABORTED");
    throw modelError(`reading ${url} failed: ${error?.message ?? error}`);
  }
  if (sha256 !== null) {
    const actual = await sha256Hex(bytes);
    if (actual !== sha256) {
      throw modelError(`${url} is not the expected file: its sha256 is ${actual}, expected ${sha256}`);
    }
  }
  if (cache) {
    await cache.put(url, new Response(bytes, { headers: { "content-length": String(bytes.length) } }));
  }
  return { bytes, fromCache: false };
}

function checkSum(value, what) {
  if (value === null || (typeof value === "string" && /^[0-9a-f]{64}$/.test(value))) return value;
  throw modelError(`${what} must be 64 lowercase hex digits, or null not to check`, "INVALID_INPUT");
}

/**
 * Fetches `model.onnx` and `tokenizer.json` from URLs the host serves (or
 * from `baseUrl`, the folder holding both), reporting progress, checks
 * each against its sha256 (by default those of `modelFiles`), and keeps
 * them in the Cache API (when the runtime has one) under `cacheName`, so
 * the second load reads them from there. A cached copy whose sha256 is
 * wrong is evicted and fetched again.
 */
export async function fetchModel(options) {
  const {
    baseUrl,
    onnxUrl = baseUrl && inFolder(baseUrl, modelFiles.onnx.name),
    tokenizerUrl = baseUrl && inFolder(baseUrl, modelFiles.tokenizer.name),
    onnxSha256 = modelFiles.onnx.sha256,
    tokenizerSha256 = modelFiles.tokenizer.sha256,
    cacheName = "mnemo-model-v1",
    onProgress,
    signal,
    fetch = globalThis.fetch.bind(globalThis),
    caches = globalThis.caches,
  } = options ?? {};
  if (!onnxUrl || !tokenizerUrl) {
    throw modelError("fetchModel needs baseUrl, or onnxUrl and tokenizerUrl", "INVALID_INPUT");
  }
  const sums = [checkSum(onnxSha256, "onnxSha256"), checkSum(tokenizerSha256, "tokenizerSha256")];
  const cache = caches ? await caches.open(cacheName) : undefined;
  const shared = { cache, fetch, onProgress, signal };
  const [onnx, tokenizer] = await Promise.all([
    fetchOne(String(onnxUrl), sums[0], shared),
    fetchOne(String(tokenizerUrl), sums[1], shared),
  ]);
  return {
    onnx: onnx.bytes,
    tokenizer: new TextDecoder().decode(tokenizer.bytes),
    fromCache: onnx.fromCache && tokenizer.fromCache,
  };
}

// The URL of file `name` in the folder `base` (relative to the page's
// location where there is one).
function inFolder(base, name) {
  const text = String(base);
  try {
    return new URL(name, new URL(text.endsWith("/") ? text : `${text}/`, globalThis.location?.href));
  } catch {
    throw modelError(`baseUrl ${text} is not a URL`, "INVALID_INPUT");
  }
}
