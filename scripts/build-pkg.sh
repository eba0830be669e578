#!/usr/bin/env bash
# Builds the npm package into dist/memtide: the host crate crates/js for
# wasm32 (SIMD on through .cargo/config.toml), wasm-bindgen's `--target web`
# glue, and pkg-template/ (typed wrapper, entry points per runtime, types).
# Prints the .wasm size raw and gzipped. Usage: bash scripts/build-pkg.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-tools.sh

out=dist/memtide
cargo build --quiet --locked --lib --release --target wasm32-unknown-unknown -p memtide-js
rm -rf "$out"
mkdir -p "$out"
# Without the name section (function names for stack traces): 0.5 MiB less
# to download gzipped.
wasm-bindgen --target web --remove-name-section --out-dir "$out/wasm" --out-name memtide \
    target/wasm32-unknown-unknown/release/memtide_js.wasm
# Every entry point tells the glue where the .wasm is, so its fallback,
# `new URL('memtide_bg.wasm', import.meta.url)`, is never taken; but bundlers
# that see it emit the .wasm once more (Next.js's edge runtime shipped both
# copies), so it goes.
glue="$out/wasm/memtide.js"
fallback="module_or_path = new URL('memtide_bg.wasm', import.meta.url);"
grep -qF "$fallback" "$glue" || { echo "build-pkg: the glue of wasm-bindgen changed: update its fallback here" >&2; exit 1; }
FALLBACK=$fallback perl -pi -e 's/\Q$ENV{FALLBACK}\E/throw new Error("memtide: no WebAssembly module given");/' "$glue"
cp -r pkg-template/* "$out/"

wasm="$out/wasm/memtide_bg.wasm"
raw=$(stat -c %s "$wasm")
gz=$(gzip -9 -c "$wasm" | wc -c)
awk -v f="$wasm" -v r="$raw" -v g="$gz" 'BEGIN {
    printf "build-pkg: %s: %.2f MiB raw, %.2f MiB gzipped (no model inside)\n", f, r / 1048576, g / 1048576
}' >&2
