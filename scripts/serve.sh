#!/usr/bin/env bash
# memtide's main job: builds the npm package (WebAssembly) and serves the
# playground (www/) on localhost, with the model files, printing the address.
# Installs what the build needs and fetches the model when missing.
#
#   bash scripts/serve.sh [--port 8080] [--host 127.0.0.1]
set -euo pipefail
cd "$(dirname "$0")/.."

MEMTIDE_MODEL_DIR=$(bash scripts/fetch-model.sh | tail -n 1)
export MEMTIDE_MODEL_DIR
bash scripts/build-pkg.sh
exec node www/serve.mjs "$@"
