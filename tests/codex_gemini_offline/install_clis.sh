#!/usr/bin/env bash
# Install the real Codex CLI and Gemini CLI (pinned versions) into the repository's git-ignored
# cache, for the offline tests in this folder. Idempotent: when the pinned versions are already
# there it only prints the two binaries' paths. Prints `codex=<path>` and `gemini=<path>` as its
# last two lines.
#
# Only the npm registry is contacted (through npm itself); Codex's native binary is an optional
# dependency published on the same registry.
set -euo pipefail

CODEX_VERSION="${CODEX_CLI_VERSION:-0.169.0}"
GEMINI_VERSION="${GEMINI_CLI_VERSION:-0.61.0}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="$REPO/.cache"
PREFIX="$CACHE/agent-clis"
CODEX="$PREFIX/node_modules/.bin/codex"
GEMINI="$PREFIX/node_modules/.bin/gemini"
STAMP="$PREFIX/.installed-codex-$CODEX_VERSION-gemini-$GEMINI_VERSION"

installed() { [[ -f "$STAMP" && -x "$CODEX" && -x "$GEMINI" ]]; }
if ! installed; then
  # One install at a time (two pytest workers may both ask first): the other waits, then finds it.
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.agent-clis.lock"
  flock 9
fi
if installed; then
  echo "codex=$CODEX"
  echo "gemini=$GEMINI"
  exit 0
fi

if ! command -v npm >/dev/null; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
    echo "install_clis.sh: npm is missing; installing the Debian package npm" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >&2
  else
    echo "install_clis.sh: npm is missing: install Node.js and npm first" >&2
    exit 3
  fi
fi

mkdir -p "$PREFIX" "$CACHE/npm"
# A package.json of its own keeps npm from walking up into the repository.
[[ -f "$PREFIX/package.json" ]] || echo '{"name": "agent-clis-cache", "private": true}' >"$PREFIX/package.json"
rm -f "$PREFIX"/.installed-*

npm install \
  --prefix "$PREFIX" \
  --cache "$CACHE/npm" \
  --no-audit --no-fund --no-save --no-package-lock --loglevel=error \
  "@openai/codex@$CODEX_VERSION" "@google/gemini-cli@$GEMINI_VERSION" >&2

for bin in "$CODEX" "$GEMINI"; do
  [[ -x "$bin" ]] || { echo "install_clis.sh: $bin missing after install" >&2; exit 4; }
done
# The binaries must run here (a wrong platform package would fail at once).
"$CODEX" --version >&2
GEMINI_CLI_NO_RELAUNCH=true "$GEMINI" --version >&2
touch "$STAMP"
echo "codex=$CODEX"
echo "gemini=$GEMINI"
