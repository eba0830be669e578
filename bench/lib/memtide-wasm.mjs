// The bench-only wasm module (bench/rust/bench_wasm.rs): memtide's MiniLM on
// its own and a store fed precomputed vectors. Same engine code and build
// flags as the npm package's .wasm.
import fs from "node:fs";
import path from "node:path";
import { BENCH_WASM_DIR } from "./paths.mjs";

const glue = await import(path.join(BENCH_WASM_DIR, "bench.js"));
glue.initSync({ module: fs.readFileSync(path.join(BENCH_WASM_DIR, "bench_bg.wasm")) });

export const { BenchEmbedder, BenchStore, memoryBytes } = glue;
