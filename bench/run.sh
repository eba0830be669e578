#!/usr/bin/env bash
# memtide's benchmark against its peers (issue 9): installs bench/'s pinned
# peers, fetches the model, builds the npm package if a source is newer
# than it, builds the Rust entry points of bench/rust/, then runs every
# section (bench/main.mjs), prints the ratio table and, after a full run,
# writes it into docs/benchmarks.md's "Latest full run". Not part of scripts/test.sh. Builds only
# what the sections asked for need (bench/rust/'s entry points for embed,
# retrieval and native; the release CLI for cli).
#
#   bash bench/run.sh [--quick] [--sections embed,retrieval,lexical,cold,footprint,native,ops,durable,cli,wasmmem]
#                     [--sizes 1000,10000,100000] [--cold-size N] [--cli-size N]
#                     [--cli-before PATH] [--cold-before DIR] [--wasmmem-before DIR] [--wasmmem-model | --wasmmem-given-vectors] [--ops-model] [--write-docs | --no-docs]
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "bench: $*" >&2; }

# The peers, exactly as bench/package-lock.json pins them. Not `npm ci`: the
# registry lacks other platforms' optional packages. Install scripts are
# skipped (onnxruntime-node's would download; its CPU binaries ship in the package).
if ! (cd bench && npm ls --omit=dev >/dev/null 2>&1); then
    log "installing bench/ dependencies"
    (cd bench && npm install --ignore-scripts --no-audit --no-fund >&2)
fi

bash scripts/fetch-model.sh >/dev/null

# The npm package, when a source is newer than its .wasm.
wasm=dist/memtide/wasm/memtide_bg.wasm
if [[ ! -f $wasm ]] || [[ -n "$(find src pkg-template Cargo.toml Cargo.lock -newer "$wasm" -print -quit)" ]]; then
    log "building the npm package"
    bash scripts/build-pkg.sh
fi

# The sections asked for (every one without --sections).
sections=embed,retrieval,lexical,cold,footprint,native,ops,durable,cli,wasmmem
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    [[ ${args[i]} == --sections ]] && sections=${args[i + 1]:-}
done
wants() { [[ ",$sections," == *",$1,"* ]]; }

if wants embed || wants retrieval || wants native; then
    log "building the bench entry points (bench/rust/)"
    cargo build --quiet --locked --release --example bench_embed --example bench_native
    cargo build --quiet --locked --release -p memtide-js-model --example bench_wasm \
        --target wasm32-unknown-unknown
    wasm-bindgen --target web --out-dir bench/.build/wasm --out-name bench \
        target/wasm32-unknown-unknown/release/examples/bench_wasm.wasm
fi
# The wasmmem section fills stores natively when it runs with the model:
# when asked to, and in every full run (the model with 100,000 memories,
# the corpus's vectors).
if wants wasmmem && [[ " $* " != *" --quick "* || " $* " == *" --wasmmem-model "* || " $* " == *" --wasmmem-given-vectors "* ]]; then
    log "building the native filler of the wasmmem section (bench/rust/fill_store.rs)"
    cargo build --quiet --locked --release --example fill_store
fi
if wants cli; then
    log "building the CLI (target/release/memtide)"
    cargo build --quiet --locked --release -p memtide-cli
fi

exec node --expose-gc --max-old-space-size=8192 bench/main.mjs "$@"
