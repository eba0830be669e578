// A small static server for the playground: the page from www/, the built
// npm package from dist/memtide/ at /memtide/, and the model files at /model/.
// Used by `scripts/serve.sh` (the README's main job) and by the Playwright
// test, which starts it on a free port.
//
//   node www/serve.mjs [--port 8080] [--host 127.0.0.1] --model-dir DIR
import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../", import.meta.url));

const contentTypes = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".onnx": "application/octet-stream",
  ".svg": "image/svg+xml",
  ".webmanifest": "application/manifest+json",
};

/** The file a URL path names under one of the mounts, or undefined. */
function fileFor(pathname, mounts) {
  let path;
  try {
    path = decodeURIComponent(pathname);
  } catch {
    return undefined;
  }
  if (path.includes("\0")) return undefined;
  if (path === "/") path = "/index.html";
  for (const [prefix, dir] of mounts) {
    if (!path.startsWith(prefix)) continue;
    const file = resolve(dir, `.${path.slice(prefix.length - 1)}`);
    // Never outside the mount, whatever `..` the request holds.
    return file.startsWith(dir + sep) ? file : undefined;
  }
  return undefined;
}

/**
 * Starts the server; resolves to `{ url, close() }` once it listens.
 * `port` 0 picks a free port. Every response says `no-cache`, so the page
 * always revalidates and the service worker keeps the offline copy.
 */
export async function startServer({ port = 8080, host = "127.0.0.1", modelDir, distDir = `${repo}dist/memtide` }) {
  if (!modelDir) throw new Error("startServer needs modelDir (scripts/fetch-model.sh prints it)");
  const mounts = [
    ["/memtide/", resolve(distDir)],
    ["/model/", resolve(modelDir)],
    ["/", resolve(repo, "www")],
  ];
  const server = createServer(async (request, response) => {
    const file = fileFor(new URL(request.url, "http://localhost").pathname, mounts);
    try {
      if (!file || !(request.method === "GET" || request.method === "HEAD")) throw new Error("not found");
      const info = await stat(file);
      if (!info.isFile()) throw new Error("not a file");
      response.writeHead(200, {
        "content-type": contentTypes[extname(file)] ?? "application/octet-stream",
        "content-length": info.size,
        "cache-control": "no-cache",
      });
      response.end(request.method === "HEAD" ? undefined : await readFile(file));
    } catch {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  await new Promise((ready, fail) => {
    server.once("error", fail);
    server.listen(port, host, ready);
  });
  const address = server.address();
  return {
    url: `http://${host}:${address.port}/`,
    close: () => new Promise((done) => {
      server.closeAllConnections();
      server.close(done);
    }),
  };
}

function option(args, name, fallback) {
  const at = args.indexOf(`--${name}`);
  return at >= 0 && at + 1 < args.length ? args[at + 1] : fallback;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const server = await startServer({
    port: Number(option(args, "port", process.env.PORT ?? 8080)),
    host: option(args, "host", "127.0.0.1"),
    modelDir: option(args, "model-dir", process.env.MEMTIDE_MODEL_DIR),
  });
  console.log(`memtide playground: ${server.url}  (Ctrl-C stops it)`);
}
