#!/usr/bin/env bash
# Runs the Deno example's tests (examples/deno/main_test.js, kv_faults_test.js) with Deno 2 from
# the npm registry (package `deno`, installed by scripts/install-tools.sh)
# against the built package in dist/memtide, and ends with a libtest-style
# "test result:" line so scripts/test.sh can count the tests.
# Usage: bash scripts/test-deno.sh   (after scripts/build-pkg.sh)
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-tools.sh >&2 || exit 1
MEMTIDE_MODEL_DIR=${MEMTIDE_MODEL_DIR:-$(bash scripts/fetch-model.sh | tail -n 1)}
export MEMTIDE_MODEL_DIR
export DENO_NO_UPDATE_CHECK=1 NO_COLOR=1
export DENO_DIR=${DENO_DIR:-$HOME/.cache/memtide/deno}

log=$(mktemp)
(cd examples/deno && ../../node_modules/.bin/deno test --allow-read --allow-write --allow-env main_test.js kv_faults_test.js) 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
summary=$(grep -Eo '[0-9]+ passed \| [0-9]+ failed' "$log" | tail -n 1)
rm -f "$log"
passed=$(echo "$summary" | awk '{print $1}')
failed=$(echo "$summary" | awk '{print $4}')
passed=${passed:-0}
failed=${failed:-0}
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
outcome=ok
[ "$status" -eq 0 ] || outcome=FAILED
echo "test result: $outcome. $passed passed; $failed failed;"
exit "$status"
