#!/usr/bin/env bash
# Install the OpenSpec CLI 1.13.2 (the version whose counting ralph-lsp matches) into .cache/.
# Prints the binary's path. Idempotent; fast when already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="$PWD/.cache/openspec"
bin="$prefix/node_modules/.bin/openspec"
if [ ! -x "$bin" ] || ! "$bin" --version 2>/dev/null | grep -qx "1.13.2"; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --cache "$PWD/.cache/npm" --no-audit --no-fund --loglevel=error \
    @fission-ai/openspec@1.13.2 >&2
fi
echo "$bin"
