#!/usr/bin/env bash
# Runs every check and test of mnemo and prints a final "N passed, N failed" line.
# Installs what it needs (rustfmt, clippy, the model files) idempotently.
set -uo pipefail
cd "$(dirname "$0")/.."

export CARGO_TERM_COLOR=never
passed=0
failed=0
failures=()

step() { printf '\n==> %s\n' "$*" >&2; }

# One check (fmt, clippy…) counts as one test.
check() {
  local name=$1; shift
  step "$name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
}

# Runs a cargo test invocation and adds its per-test counts.
cargo_tests() {
  local name=$1; shift
  step "$name"
  local log
  log=$(mktemp)
  cargo "$@" 2>&1 | tee "$log"
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

step "toolchain"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true

step "model files"
MNEMO_MODEL_DIR=$(bash scripts/fetch-model.sh | tail -n 1) || { echo "fetching the model failed" >&2; exit 1; }
export MNEMO_MODEL_DIR

check "cargo fmt --check" cargo fmt --all -- --check
check "cargo clippy -D warnings" cargo clippy --all-targets --locked -- -D warnings
check "cargo check wasm32 (library with the model)" \
  cargo check --lib --locked --target wasm32-unknown-unknown --no-default-features --features semantic
cargo_tests "cargo test (unit, integration, examples)" test --lib --bins --tests --examples --locked --no-fail-fast
cargo_tests "doc tests" test --doc --locked

echo
if [ "$failed" -ne 0 ]; then
  echo "failed: ${failures[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
