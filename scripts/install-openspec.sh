#!/usr/bin/env bash
# Install the OpenSpec CLI 1.13.2 (the version whose counting ralph-lsp matches) into .cache/.
# Prints the binary's path. Idempotent; fast when already installed.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="$PWD/.cache/openspec"
bin="$prefix/node_modules/.bin/openspec"
installed() { [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -qx "1.13.2"; }
if ! installed; then
  # One install at a time (two pytest workers may both ask first): the other waits, then finds it.
  mkdir -p "$PWD/.cache"
  exec 9>"$PWD/.cache/.openspec.lock"
  flock 9
fi
if ! installed; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --cache "$PWD/.cache/npm" --no-audit --no-fund --loglevel=error \
    @fission-ai/openspec@1.13.2 >&2
fi
echo "$bin"
