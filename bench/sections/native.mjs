// Section 6, native figures: memtide natively, with no peer (the
// bench_native example, bench/rust/bench_native.rs): the model's load, heap
// and latencies, the ingest rate, and at each of the run's sizes the
// retrieve latency and heap per 10k memories. The program prints its own
// report, kept as text: its figures have no peer to make a ratio with.
import { execFileSync } from "node:child_process";
import { NATIVE_FIGURES_BIN, modelDir } from "../lib/paths.mjs";

export function runNative({ sizes, log }) {
  log(`native: model, ingest, retrieval at ${sizes.join(", ")} memories`);
  const report = execFileSync(NATIVE_FIGURES_BIN, ["--model", modelDir(), "--sizes", sizes.join(",")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return { report };
}
