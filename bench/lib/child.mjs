// Sections that need a clean heap (memory figures) or a different runtime
// run in a child `node` process that prints one JSON line last.
import { execFileSync } from "node:child_process";

/** Runs `node --expose-gc script ...args`; returns the JSON of its last stdout line. */
export function runNodeChild(script, args = []) {
  const stdout = execFileSync(process.execPath, ["--expose-gc", "--max-old-space-size=8192", script, ...args.map(String)], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    maxBuffer: 256 * 1024 * 1024,
  });
  return JSON.parse(stdout.trim().split("\n").pop());
}

/** `--name value` pairs of argv as an object (numbers parsed). */
export function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    const value = argv[i + 1];
    out[argv[i].replace(/^--/, "")] = value !== undefined && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  }
  return out;
}

/** Whether `url` (import.meta.url) is the script node was started with. */
export const isMain = (url) => process.argv[1] && new URL(url).pathname === process.argv[1];
