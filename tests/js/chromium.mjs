// Launches the headless Chromium the browser tests drive: Debian's
// /usr/bin/chromium (or $CHROMIUM) through playwright-core, with nothing
// in the background that reaches the network.
import { chromium } from "playwright-core";

export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run", "--disable-quic"],
  });
}
