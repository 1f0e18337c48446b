#!/usr/bin/env bash
# Unit tests of the client's pure parts (no VS Code): type-check, compile each test with esbuild
# into a temporary folder, run them with node's test runner.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_node_modules
cd "$CLIENT_DIR"
BIN="$CLIENT_DIR/node_modules/.bin"

log "type-check"
"$BIN/tsc" --noEmit -p .

out=$(mktemp -d "${TMPDIR:-/tmp}/ralph-client-unit.XXXXXX")
trap 'rm -rf "$out"' EXIT
# `vscode` stays external: a pure module that imports it fails here instead of passing silently.
# Tests find package.json (and the launcher) through __dirname, so the bundles sit one level
# below a copy of them.
mkdir -p "$out/unit" "$out/bundled"
cp package.json "$out/"
cp -r bundled/tool "$out/bundled/"  # the server's launcher, run by the interpreter tests
"$BIN/esbuild" test/unit/*.test.ts --bundle --external:vscode --format=cjs --platform=node \
  --target=node20 --outdir="$out/unit" --log-level=warning
node --test --test-reporter=spec "$out"/unit/*.test.js
