#!/usr/bin/env bash
# Builds the release CLI of an earlier commit in a worktree of its own (its
# own target/), for the cli section's comparison, and prints the binary's
# path. Default: 9cf0a82, the last commit before the segmented layout
# (format 4) landed. Usage:
#
#   bash bench/cli-before.sh [COMMIT] [WORKTREE_DIR]     (default: 9cf0a82 /work/m-before)
#   bash bench/run.sh --sections cli --cli-before "$(bash bench/cli-before.sh)"
set -euo pipefail
cd "$(dirname "$0")/.."
commit=${1:-9cf0a82}
dir=${2:-/work/m-before}
if [[ ! -e $dir ]]; then
    git worktree add --detach "$dir" "$commit" >&2
fi
[[ "$(git -C "$dir" rev-parse HEAD)" == "$(git rev-parse "$commit^{commit}")" ]] || {
    echo "cli-before: $dir is not at $commit" >&2
    exit 1
}
(cd "$dir" && cargo build --quiet --locked --release -p memtide-cli >&2)
echo "$dir/target/release/memtide"
