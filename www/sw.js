// The playground's service worker: the page works offline after its first
// load. Requests go to the network first and refresh the cached copy; when
// the network fails, the cached copy answers. The model files are left to
// `fetchModel`, which keeps them in its own Cache API entry.
const CACHE = "memtide-playground-v3";
// The package's two WebAssembly modules with their glue: the core, and the
// model's (the playground embeds once its model is loaded).
const SHELL = [
  "/", "/index.html", "/style.css", "/app.js", "/store-worker.js", "/manifest.webmanifest", "/icon.svg",
  "/memtide/browser.js", "/memtide/memory.js", "/memtide/error.js", "/memtide/model.js", "/memtide/worker.js",
  "/memtide/wasm/memtide.js", "/memtide/wasm/memtide_bg.wasm",
  "/memtide/wasm/memtide_model.js", "/memtide/wasm/memtide_model_bg.wasm",
];

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith("memtide-playground-") && name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

async function networkFirst(request) {
  const cache = await caches.open(CACHE);
  try {
    const response = await fetch(request);
    if (response.ok) await cache.put(request, response.clone());
    return response;
  } catch (offline) {
    const cached = await cache.match(request, { ignoreSearch: true });
    if (cached) return cached;
    throw offline;
  }
}

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin || url.pathname.startsWith("/model/")) {
    return;
  }
  event.respondWith(networkFirst(event.request));
});
