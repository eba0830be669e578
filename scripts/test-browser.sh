#!/usr/bin/env bash
# Runs memtide's Rust tests inside headless Chromium (wasm-bindgen-test-runner
# driving Debian's chromium through chromedriver, flags in webdriver.json),
# the modules of the test binary `portable` (tests/portable/):
#
#   storage_conformance   the storage contract on IndexedDB (and the in-memory
#                         and journaled backends) in the browser, reopen after
#                         close, conflicts between two connections, aborted
#                         transactions, a real QuotaExceededError
#   embed_golden          the MiniLM golden vectors, run by tract in wasm
#   vector_scores         the vector index's scores against exact cosines,
#                         through its WebAssembly SIMD dot products
#   wasm_gemm             memtide's matrix-product kernel for tract against
#                         tract's own, bit for bit, and tract's choice of it
#
# Installs chromium/chromedriver and wasm-bindgen-cli if missing. Prints the
# runner's output; exits non-zero on a failure.
# Usage: bash scripts/test-browser.sh [cargo test args…]
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-tools.sh --browser
MEMTIDE_MODEL_DIR=${MEMTIDE_MODEL_DIR:-$(bash scripts/fetch-model.sh | tail -n 1)}
export MEMTIDE_MODEL_DIR # compiled into the golden test's wasm module
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
export CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver}
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-600}
# Keep the browser's profile out of the home directory.
export TMPDIR=${TMPDIR:-/tmp}

# --release shares the dependencies scripts/build-pkg.sh compiled (same
# target, features and profile): one build of tract for wasm32, not two.
# The engine's tests in wasm32 use crates/js (a dev-dependency there) for
# IndexedDB and the JavaScript randomness.
exec cargo test --locked --release --target wasm32-unknown-unknown --no-default-features --features semantic \
    --test portable "$@"
