// Headless Debian Chromium through playwright-core (the flags of
// tests/js/chromium.mjs: nothing in the background reaches the network).
import { chromium } from "playwright-core";

const OPTIONS = {
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic"],
};

/** Chromium on the profile directory `dir` (its HTTP cache, code cache and
 * IndexedDB on disk, as a user's browser keeps them): a browser context;
 * closing it closes the browser. */
export function launchChromiumProfile(dir) {
  return chromium.launchPersistentContext(dir, OPTIONS);
}
