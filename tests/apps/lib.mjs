// Helpers of the app tests: running the tools, serving a built app, and
// visiting it twice in Chromium.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { launchChromium } from "../js/chromium.mjs";

export const apps = new URL("./", import.meta.url);
export const text = "The lighthouse keeper feeds the cat at dawn.";

/** Runs a command to its end; rejects with its output when it fails. */
export function run(command, args, { cwd = apps, env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve({ stdout, stderr });
      else reject(Object.assign(new Error(`${command} ${args.join(" ")} exited with ${code}\n${stdout}\n${stderr}`), { stdout, stderr }));
    });
  });
}

/** Starts a long-running command and resolves once `ready` matches its output. */
export function start(command, args, ready, { cwd = apps, env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let output = "";
    const stop = () => { try { process.kill(-child.pid); } catch { /* already gone */ } };
    const seen = (d) => {
      output += d;
      const match = output.match(ready);
      if (match) resolve({ match, stop, output: () => output });
    };
    child.stdout.on("data", seen);
    child.stderr.on("data", seen);
    child.on("error", reject);
    child.on("close", (code) => reject(new Error(`${command} ${args.join(" ")} exited with ${code} before it was ready\n${output}`)));
  });
}

const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css" };

/** Serves a directory of static files on 127.0.0.1, as a web host would. */
export async function serve(dir) {
  const server = createServer(async (request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url, "http://x").pathname)).replace(/^(\.\.[/\\])+/, "");
    const file = join(dir, path.endsWith("/") ? `${path}index.html` : path);
    try {
      const body = await readFile(file);
      response.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" });
      response.end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => server.close() };
}

/**
 * Loads the app at `url` in a fresh Chromium profile, then reloads it
 * `times - 1` times, and returns what the page left in `window.memtideApp`
 * each time. A page that fails before it gets there (a module that does not
 * load) rejects with the page's error; so does a page whose .wasm was not
 * compiled while it downloaded (wasm-bindgen's glue warns when it falls
 * back to the bytes: a server that does not send `application/wasm`).
 */
export async function visit(url, times) {
  const browser = await launchChromium();
  try {
    const page = await (await browser.newContext()).newPage();
    const problems = [];
    page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
    let failed;
    const pageError = new Promise((_, reject) => { failed = reject; });
    page.on("pageerror", (e) => failed(new Error(`page error: ${e.stack ?? e}\n${problems.join("\n")}`)));
    page.on("console", (m) => m.type() === "warning" && m.text().includes("instantiateStreaming") &&
      failed(new Error(`the .wasm was not compiled while it downloaded: ${m.text()}`)));
    const outcomes = [];
    for (let load = 0; load < times; load += 1) {
      await (load === 0 ? page.goto(url) : page.reload());
      // Only a guard against a hang: a working app answers in seconds.
      const outcome = page.waitForFunction(() => window.memtideApp, null, { timeout: 180_000 }).then((h) => h.jsonValue());
      outcomes.push(await Promise.race([outcome, pageError]));
    }
    return outcomes;
  } finally {
    await browser.close();
  }
}

/** Loads the app at `url`, then reloads it: see `visit`. */
export const visitTwice = (url) => visit(url, 2);

/**
 * The outcomes of a working browser app: stored on the first visit, found
 * again after the reload; the model's module started on each.
 */
export const remembered = [
  { before: 0, hits: [text], modelModule: "INVALID_INPUT" },
  { before: 1, hits: [text], modelModule: "INVALID_INPUT" },
];
