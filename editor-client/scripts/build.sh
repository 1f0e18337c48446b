#!/usr/bin/env bash
# Builds the extension: npm ci (cached), type-check (tsc --noEmit), one esbuild bundle into dist/.
#   --vsix   also packages it into editor-client/ralph-lsp-<version>.vsix (prints the path last)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vsix=false
for arg in "$@"; do
  case "$arg" in
    --vsix) vsix=true ;;
    *) die "unknown argument: $arg (usage: build.sh [--vsix])" ;;
  esac
done

ensure_node_modules
cd "$CLIENT_DIR"
BIN="$CLIENT_DIR/node_modules/.bin"

log "type-check"
"$BIN/tsc" --noEmit -p .

log "bundle"
rm -rf dist
"$BIN/esbuild" src/extension.ts --bundle --external:vscode --format=cjs --platform=node \
  --target=node20 --sourcemap --outfile=dist/extension.js --log-level=warning

if $vsix; then
  version=$(node -p 'require("./package.json").version')
  out="$CLIENT_DIR/ralph-lsp-$version.vsix"
  log "package $out"
  rm -f "$out"
  "$BIN/vsce" package --no-dependencies --allow-missing-repository --out "$out" >/dev/null
  echo "$out"
fi
