#!/usr/bin/env bash
# Installs what building and testing memtide's WebAssembly package needs, from
# package registries only, idempotently (each step is skipped when present):
#
#   rustup targets       wasm32-unknown-unknown, wasm32-wasip2
#   wasm-bindgen-cli     the exact version of the wasm-bindgen crate in
#                        Cargo.lock (cargo install, cached in ~/.cargo/bin)
#   npm packages         package.json's devDependencies (npm install)
#   chromium             Debian's chromium and chromium-driver (apt), with --browser
#   app tools            tests/apps/package-lock.json (vite, webpack, wrangler,
#                        next…: what the app tests build with), with --apps
#
# Usage: bash scripts/install-tools.sh [--browser] [--apps]
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "install-tools: $*" >&2; }

browser=false
apps=false
for arg in "$@"; do
    case "$arg" in
        --browser) browser=true ;;
        --apps) apps=true ;;
        *) log "unknown argument $arg"; exit 1 ;;
    esac
done

rustup target add wasm32-unknown-unknown wasm32-wasip2 >/dev/null 2>&1 || {
    log "rustup could not add the wasm32-unknown-unknown and wasm32-wasip2 targets"
    exit 1
}

# The CLI must match the crate exactly (wasm-bindgen refuses other versions).
wanted=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [[ "$have" != "$wanted" ]]; then
    log "installing wasm-bindgen-cli $wanted (a few minutes, once)"
    # No --locked: its lockfile pins a crate version the registry lacks.
    cargo install --quiet wasm-bindgen-cli --version "$wanted" >&2
fi

if [[ ! -d node_modules ]] || [[ package.json -nt node_modules/.package-lock.json ]]; then
    log "npm install"
    # Not `npm ci`: the registry lacks other platforms' optional packages.
    npm install --no-audit --no-fund --loglevel=error >&2
fi

if [[ "$apps" == true ]] && { [[ ! -d tests/apps/node_modules ]] ||
    [[ tests/apps/package-lock.json -nt tests/apps/node_modules/.package-lock.json ]]; }; then
    log "npm ci in tests/apps (the bundlers and runtimes of the app tests)"
    (cd tests/apps && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

if [[ "$browser" == true ]] && ! { command -v chromium && command -v chromedriver; } >/dev/null; then
    log "installing chromium and chromium-driver (apt)"
    sudo_cmd=()
    [[ "$(id -u)" -ne 0 ]] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
        chromium chromium-driver >&2
fi
