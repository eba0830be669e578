// Launches the headless Chromium the browser tests drive: Debian's
// /usr/bin/chromium (or $CHROMIUM) through playwright-core, with nothing
// in the background that reaches the network.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname } from "node:path";
import { chromium } from "playwright-core";

export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run", "--disable-quic"],
  });
}

const contentTypes = { ".js": "text/javascript", ".wasm": "application/wasm", ".html": "text/html", ".json": "application/json" };

/**
 * Serves a test's pages with the built package on 127.0.0.1 and launches
 * Chromium. `route(path, request)` answers a request path with a body (a
 * string or bytes), or `undefined` to fall through: paths under /dist/memtide/ are
 * the package's files, anything else is 404. Every path asked for is kept
 * in `requests`.
 */
export async function servePackage(route) {
  const root = new URL("../../", import.meta.url);
  const requests = [];
  const server = createServer(async (req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    requests.push(path);
    try {
      let body = await route(path, req);
      if (body === undefined && path.startsWith("/dist/memtide/")) body = await readFile(new URL(path.slice(1), root));
      if (body === undefined) throw new Error("not found");
      res.writeHead(200, { "content-type": contentTypes[extname(path)] ?? "text/html", "content-length": Buffer.byteLength(body) });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const browser = await launchChromium();
  return {
    base: `http://127.0.0.1:${server.address().port}/`,
    browser,
    requests,
    /** A new tab of `context` on the test page, once its script has set the title "ready". */
    async openTab(context) {
      const tab = await context.newPage();
      tab.on("pageerror", (e) => console.error("page error:", e));
      await tab.goto(this.base);
      await tab.waitForFunction(() => document.title === "ready");
      return tab;
    },
    async close() {
      await browser.close();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
