#!/usr/bin/env bash
# Runs every check and test of memtide and prints a final "N passed, N failed" line.
# Installs what it needs (rustfmt, clippy, the model files) idempotently.
set -uo pipefail
cd "$(dirname "$0")/.."

export CARGO_TERM_COLOR=never
passed=0
failed=0
failures=()

# Each step's wall time, printed at the end: a fresh clone must finish within
# CI's time on two cores, and this shows where the time goes.
stage=""
stage_start=$SECONDS
stage_times=()
end_stage() {
  [ -n "$stage" ] && stage_times+=("$(printf '%5d s  %s' $((SECONDS - stage_start)) "$stage")")
  stage=""
}
step() {
  end_stage
  stage=$*
  stage_start=$SECONDS
  printf '\n==> %s\n' "$*" >&2
}

# One check (fmt, clippy…) counts as one test.
check() {
  local name=$1; shift
  step "$name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
}

# Runs a command printing libtest summaries (cargo test, wasm-bindgen-test)
# and adds its per-test counts.
rust_tests() {
  local name=$1; shift
  step "$name"
  local log
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local p f
  p=$(grep -Eo 'test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | awk '{s += $4} END {print s + 0}')
  f=$(grep -Eo '[0-9]+ failed;' "$log" | awk '{s += $1} END {print s + 0}')
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
    failed=$((failed + 1)) # a build failure or crash counts as one failure
  fi
  [ "$status" -eq 0 ] || failures+=("$name")
  rm -f "$log"
}

# Runs a `node --test` invocation and adds its per-test counts.
node_tests() {
  local name=$1; shift
  step "$name"
  local log
  log=$(mktemp)
  node --test --test-reporter=tap "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local p f
  p=$(awk '/^# pass / {print $3}' "$log" | tail -n 1)
  f=$(awk '/^# fail / {print $3}' "$log" | tail -n 1)
  p=${p:-0}; f=${f:-0}
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
    failed=$((failed + 1))
  fi
  [ "$status" -eq 0 ] || failures+=("$name")
  rm -f "$log"
}

# Reports the free space where the build goes: a full disk shows up as many
# unrelated failures, and this line names the cause.
disk_report() { df -h --output=avail,target . 2>/dev/null | tail -n 1 | awk '{print "free disk: " $1 " on " $2}' >&2; }

# A CI checkout builds once: incremental caches would only take disk.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi

disk_report
step "toolchain"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
bash scripts/install-tools.sh --browser || { echo "installing the tools failed" >&2; exit 1; }

step "model files"
MEMTIDE_MODEL_DIR=$(bash scripts/fetch-model.sh | tail -n 1) || { echo "fetching the model failed" >&2; exit 1; }
export MEMTIDE_MODEL_DIR

check "cargo fmt --check" cargo fmt --all -- --check
# The host crates for wasm32 only (crates/js, crates/js-model, crates/wit) are
# built for their own targets below; everything else natively. The JS host
# crates are linted for wasm32 too, and the engine alone does not build for
# wasm32-unknown-unknown (its randomness comes from crates/js), so it is
# linted there together with crates/js. crates/wit has no code of its own
# for one target (no `cfg`), so it is linted natively with the workspace: a
# pass for wasm32-wasip2 checked tract once more for that target (110 s of
# a fresh run) to lint the same code.
native=(--workspace --exclude memtide-js --exclude memtide-js-model --exclude memtide-wit)
check "cargo clippy -D warnings" \
  cargo clippy --workspace --exclude memtide-js --exclude memtide-js-model --all-targets --locked -- -D warnings
# The test kit turns on the engine's `testing` feature (internal modules
# public) in every build that selects it; the engine and the CLI as a user
# builds them are linted without it, so dead code behind it shows; the
# CLI also without its default `semantic` feature (a lexical-only build).
check "cargo clippy without the testing feature -D warnings" \
  bash -c 'cargo clippy -p memtide -p memtide-cli --lib --bins --locked -- -D warnings &&
    cargo clippy -p memtide-cli --bins --no-default-features --locked -- -D warnings'
check "cargo clippy wasm32 (the engine, the JS host crates, the SIMD kernels) -D warnings" \
  bash -c 'cargo clippy -p memtide -p memtide-js --lib --locked --target wasm32-unknown-unknown --no-default-features -- -D warnings &&
    cargo clippy -p memtide-js-model --lib --example bench_wasm --locked --target wasm32-unknown-unknown -- -D warnings &&
    cargo clippy -p memtide-wasm-gemm -p memtide-int-dot --locked --target wasm32-unknown-unknown -- -D warnings'
rust_tests "cargo test (unit, integration, examples)" \
  cargo test "${native[@]}" --lib --bins --tests --examples --locked --no-fail-fast
rust_tests "doc tests" cargo test "${native[@]}" --doc --locked
rust_tests "WIT component (jco in Node, wasmtime in Python)" bash scripts/test-wit.sh

check "build the npm package (wasm32 + wasm-bindgen)" bash scripts/build-pkg.sh
rust_tests "browser tests (headless Chromium)" bash scripts/test-browser.sh --no-fail-fast
node_tests "node tests of the npm package" tests/js/
check "pack the npm package and install it into the test apps" bash scripts/pack-apps.sh
# Node, Vite (dev and build), webpack, Wrangler, Deno and Next.js apps, built
# with the real tools and run where their users run them; the AI SDK and
# LangGraph integrations in Node and in Chromium; and the storage
# adapters' conformance suite in Node, workerd (KV, Durable Objects) and Deno.
node_tests "apps using the installed package (tests/apps)" tests/apps/*.test.mjs
rust_tests "deno tests (examples/deno)" bash scripts/test-deno.sh

end_stage
disk_report
echo
echo "wall time of each step (total $SECONDS s):"
printf '%s\n' "${stage_times[@]}"
echo
if [ "$failed" -ne 0 ]; then
  echo "failed: ${failures[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
