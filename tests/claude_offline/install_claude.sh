#!/usr/bin/env bash
# Install the real Claude Code CLI into the repository's git-ignored cache, for the offline
# tests in this folder. Idempotent: when the pinned version is already there it only prints
# the binary's path. Prints the absolute path of the `claude` binary as its last line.
#
# Only the npm registry is contacted (through npm itself); the package's platform binary is an
# optional dependency published on the same registry.
set -euo pipefail

VERSION="${CLAUDE_CODE_VERSION:-2.1.330}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="$REPO/.cache"
PREFIX="$CACHE/claude-code"
BIN="$PREFIX/node_modules/.bin/claude"
STAMP="$PREFIX/.installed-$VERSION"

if [[ -f "$STAMP" && -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi

# One install at a time (two pytest workers may both ask first): the other waits, then finds it.
mkdir -p "$CACHE"
exec 9>"$CACHE/.claude-code.lock"
flock 9
if [[ -f "$STAMP" && -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi

if ! command -v npm >/dev/null; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "install_claude.sh: npm is missing; installing the Debian package npm" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >&2
  else
    echo "install_claude.sh: npm is missing: install Node.js and npm first" >&2
    exit 3
  fi
fi

mkdir -p "$PREFIX" "$CACHE/npm"
# A package.json of its own keeps npm from walking up into the repository.
[[ -f "$PREFIX/package.json" ]] || echo '{"name": "claude-code-cache", "private": true}' >"$PREFIX/package.json"
rm -f "$PREFIX"/.installed-*

npm install \
  --prefix "$PREFIX" \
  --cache "$CACHE/npm" \
  --no-audit --no-fund --no-save --no-package-lock --loglevel=error \
  "@anthropic-ai/claude-code@$VERSION" >&2

[[ -x "$BIN" ]] || { echo "install_claude.sh: $BIN missing after install" >&2; exit 4; }
# The binary must run here (a wrong platform package would fail at once).
"$BIN" --version >&2
touch "$STAMP"
echo "$BIN"
