// Where the benchmark finds its inputs and puts its build products.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

export const BENCH_DIR = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const REPO_DIR = path.dirname(BENCH_DIR);
/** Build products of bench/run.sh (git-ignored). */
export const BUILD_DIR = path.join(BENCH_DIR, ".build");
/** wasm-bindgen output of the bench-only module (bench/rust/bench_wasm.rs). */
export const BENCH_WASM_DIR = path.join(BUILD_DIR, "wasm");
export const PACKAGE_DIR = path.join(REPO_DIR, "dist", "memtide");
export const PACKAGE_WASM = path.join(PACKAGE_DIR, "wasm", "memtide_bg.wasm");
export const NATIVE_EMBED_BIN = path.join(REPO_DIR, "target", "release", "examples", "bench_embed");
/** The native section's program (bench/rust/bench_native.rs). */
export const NATIVE_FIGURES_BIN = path.join(REPO_DIR, "target", "release", "examples", "bench_native");
/** Fills a store natively with the model for the wasmmem section (bench/rust/fill_store.rs). */
export const FILL_STORE_BIN = path.join(REPO_DIR, "target", "release", "examples", "fill_store");

/** The model directory of scripts/fetch-model.sh (model.onnx, tokenizer.json). */
export function modelDir() {
  if (process.env.MEMTIDE_MODEL_DIR) return process.env.MEMTIDE_MODEL_DIR;
  const script = path.join(REPO_DIR, "scripts", "fetch-model.sh");
  return execFileSync("bash", [script, "--print-dir"], { encoding: "utf8" }).trim().split("\n").pop();
}
