#!/usr/bin/env bash
# Packs the built package (dist/memtide, from scripts/build-pkg.sh) once with
# `npm pack`, as it would be published, and installs the tarball into the test
# apps' shared node_modules (tests/apps), where each app imports it by name.
# The tools the apps are built with come from tests/apps/package-lock.json
# (scripts/install-tools.sh --apps).
# Usage: bash scripts/pack-apps.sh   (then node --test tests/apps/*.test.mjs)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-tools.sh --apps
# An earlier install must not stand in for a tarball that failed to build.
rm -rf tests/apps/node_modules/memtide
packs=$(mktemp -d)
trap 'rm -rf "$packs"' EXIT
tarball=$(cd dist/memtide && npm pack --silent --pack-destination "$packs")
(cd tests/apps && npm install --no-save --no-audit --no-fund --loglevel=error "$packs/$tarball")
echo "pack-apps: installed $tarball into tests/apps" >&2
