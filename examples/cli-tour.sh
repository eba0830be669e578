#!/usr/bin/env bash
# A short tour of the memtide CLI over a fresh store.
# Usage: bash examples/cli-tour.sh [STORE_DIR]   (default: a temporary directory)
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet -p memtide-cli --bin memtide
memtide=target/debug/memtide
store=${1:-$(mktemp -d)/store}
export MEMTIDE_STORE=$store

say() { printf '\n\033[1m%s\033[0m\n' "$*"; }

say "1. ingest a conversation's memories (two workspaces, one private span, one opt-out)"
$memtide ingest <<'JSONL'
{"text":"I take my coffee as a cortado, no sugar.","scope":{"userId":"alice","workspaceId":"home"},"kind":"preference","source":{"kind":"message","ref":"msg-1"}}
{"text":"The garage door code is <private>4471</private> and the spare key is under the blue pot.","scope":{"userId":"alice","workspaceId":"home"},"kind":"fact"}
{"text":"Deploys to production need two approvals.","scope":{"userId":"alice","workspaceId":"work","projectId":"api"},"kind":"fact","pinned":true}
{"text":"Staging deploys happen every weekday at 10:00.","scope":{"userId":"alice","workspaceId":"work"},"kind":"fact"}
{"text":"I take my coffee as a cortado, no sugar.","scope":{"userId":"alice","workspaceId":"home"},"source":{"kind":"message","ref":"msg-7"}}
{"text":"<no-memory> my bank PIN is 9911","scope":{"userId":"alice","workspaceId":"home"}}
JSONL

say "2. retrieve in the 'home' workspace (work memories never leak in)"
echo '{"text":"how do I like my coffee?","scope":{"userId":"alice","workspaceId":"home"},"explain":true}' | $memtide retrieve

say "3. inject into a prompt with a 150-token budget (pinned first, cited)"
echo '{"text":"when do staging deploys happen?","scope":{"userId":"alice","workspaceId":"work","projectId":"api"},"budgetTokens":150}' \
  | $memtide inject | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print(r["block"]); print("tokens:", r["tokens"], "used:", r["used"])'

say "4. stats"
$memtide stats

say "store: $store"
