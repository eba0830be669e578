// Fetching the model files with progress, cached so later page loads do not
// download them again. memtide never fetches a model by itself: the host says
// where its copy of the files lives.

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

async function fetchOne(url, { cache, fetch, onProgress }) {
  const cached = cache ? await cache.match(url) : undefined;
  const response = cached ?? await fetch(url);
  if (!response.ok) {
    const error = new Error(`fetching ${url} failed: HTTP ${response.status}`);
    error.code = "MODEL";
    throw error;
  }
  const bytes = await readWithProgress(response, url, onProgress);
  if (cache && !cached) {
    await cache.put(url, new Response(bytes, { headers: { "content-length": String(bytes.length) } }));
  }
  return { bytes, fromCache: Boolean(cached) };
}

/**
 * Fetches `model.onnx` and `tokenizer.json` from URLs the host serves,
 * reporting progress, and keeps them in the Cache API (when the runtime has
 * one) under `cacheName`, so the second load reads them from there.
 */
export async function fetchModel({
  onnxUrl,
  tokenizerUrl,
  cacheName = "mnemo-model-v1",
  onProgress,
  fetch = globalThis.fetch.bind(globalThis),
  caches = globalThis.caches,
}) {
  if (!onnxUrl || !tokenizerUrl) {
    const error = new Error("fetchModel needs onnxUrl and tokenizerUrl");
    error.code = "INVALID_INPUT";
    throw error;
  }
  const cache = caches ? await caches.open(cacheName) : undefined;
  const options = { cache, fetch, onProgress };
  const [onnx, tokenizer] = await Promise.all([
    fetchOne(String(onnxUrl), options),
    fetchOne(String(tokenizerUrl), options),
  ]);
  return {
    onnx: onnx.bytes,
    tokenizer: new TextDecoder().decode(tokenizer.bytes),
    fromCache: onnx.fromCache && tokenizer.fromCache,
  };
}
