#!/usr/bin/env bash
# Builds the npm package into dist/memtide: its two WebAssembly modules for
# wasm32 (SIMD on through .cargo/config.toml) — the core, crates/js (the
# engine without its `semantic` feature), and the model, crates/js-model
# (MiniLM on tract), which the package loads only when an app gives a
# model — wasm-bindgen's `--target web` glue of each, and pkg-template/
# (typed wrapper, entry points per runtime, types). Prints each .wasm's
# size raw and gzipped. Usage: bash scripts/build-pkg.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-tools.sh

out=dist/memtide
# Two cargo invocations: in one, cargo would unify the engine's features and
# build the core with `semantic` too.
cargo build --quiet --locked --lib --release --target wasm32-unknown-unknown -p memtide-js
cargo build --quiet --locked --lib --release --target wasm32-unknown-unknown -p memtide-js-model
rm -rf "$out"
mkdir -p "$out"
# Every entry point tells the glue where its .wasm is, so its fallback,
# `new URL('<name>_bg.wasm', import.meta.url)`, is never taken; but bundlers
# that see it emit the .wasm once more (Next.js's edge runtime shipped both
# copies), so it goes.
bindgen() { # crate file name, output name
    # Without the name section (function names for stack traces): 0.5 MiB
    # less to download gzipped.
    wasm-bindgen --target web --remove-name-section --out-dir "$out/wasm" --out-name "$2" \
        "target/wasm32-unknown-unknown/release/$1.wasm"
    local glue="$out/wasm/$2.js"
    local fallback="module_or_path = new URL('$2_bg.wasm', import.meta.url);"
    grep -qF "$fallback" "$glue" || { echo "build-pkg: the glue of wasm-bindgen changed: update its fallback here" >&2; exit 1; }
    FALLBACK=$fallback perl -pi -e 's/\Q$ENV{FALLBACK}\E/throw new Error("memtide: no WebAssembly module given");/' "$glue"
}
bindgen memtide_js memtide
bindgen memtide_js_model memtide_model
cp -r pkg-template/* "$out/"

for wasm in "$out/wasm/memtide_bg.wasm" "$out/wasm/memtide_model_bg.wasm"; do
    raw=$(stat -c %s "$wasm")
    gz=$(gzip -9 -c "$wasm" | wc -c)
    awk -v f="$wasm" -v r="$raw" -v g="$gz" 'BEGIN {
        printf "build-pkg: %s: %.2f MiB raw, %.2f MiB gzipped (no model weights inside)\n", f, r / 1048576, g / 1048576
    }' >&2
done
