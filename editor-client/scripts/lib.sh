# Shared helpers for the editor-client scripts. Source it; do not run it.
# Everything that is downloaded is cached under <repo>/.cache (git-ignored) so a second run is fast.
set -euo pipefail

CLIENT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_ROOT=$(cd "$CLIENT_DIR/.." && pwd)
CACHE_DIR=${RALPH_CACHE_DIR:-$REPO_ROOT/.cache}
export npm_config_cache="$CACHE_DIR/npm"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# Versions of the end-to-end tooling (the client's own packages are pinned in package.json).
CODE_SERVER_VERSION=4.139.1
NODE24_VERSION=24.21.0

log() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# npm ci, skipped when node_modules already matches package-lock.json and has its tools.
# Serialized with a lock: two scripts running at once must not both rewrite node_modules.
ensure_node_modules() {
  local stamp="$CLIENT_DIR/node_modules/.ralph-lock-sha"
  local want tool
  want=$(sha256sum "$CLIENT_DIR/package-lock.json" | cut -d' ' -f1)
  mkdir -p "$CACHE_DIR"
  (
    flock 8
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
      for tool in tsc esbuild vsce; do
        [[ -x "$CLIENT_DIR/node_modules/.bin/$tool" ]] || { rm -f "$stamp"; break; }
      done
      [[ -f "$stamp" ]] && exit 0
    fi
    log "npm ci (cache: ${npm_config_cache#"$REPO_ROOT"/})"
    cd "$CLIENT_DIR"
    # --ignore-scripts: nothing here needs an install script (esbuild finds its binary package
    # without one; vsce's optional keytar is only for publishing).
    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
    echo "$want" >"$stamp"
  ) 8>"$CACHE_DIR/npm-ci.lock"
}

# Debian packages, installed only when one is missing (apt-get update runs once, first).
ensure_apt_packages() {
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  ((${#missing[@]} == 0)) && return 0
  log "apt-get install ${missing[*]}"
  local sudo=()
  [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# end_everything_on_exit: from now on, any exit of this script (its end, a failure, SIGINT,
# SIGTERM, SIGHUP) ends every process it started, however detached. Each carries a fresh
# RALPH_E2E_TAG in its environment (code-server in a session of its own, its extension hosts and
# their language servers, Chromium under playwright, node) and is found by it in /proc: SIGTERM,
# then SIGKILL for whatever is left after 5 s. Bash runs a trap only between commands: start a
# long one as `cmd & wait $!`, or a SIGTERM waits for it to end by itself.
end_everything_on_exit() {
  E2E_TAG="RALPH_E2E_TAG=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  export "${E2E_TAG?}"
  trap 'end_tagged' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
}

# The live processes carrying this script's tag (grep runs without it: it reads its own environ).
tagged_pids() {
  local files f
  files=$(env -u RALPH_E2E_TAG grep -lzxF -- "$E2E_TAG" /proc/[0-9]*/environ 2>/dev/null) || true
  for f in $files; do
    f=${f#/proc/}
    echo "${f%/environ}"
  done
}

end_tagged() {
  local pids i
  trap - INT TERM HUP
  pids=$(tagged_pids)
  [[ -z $pids ]] && return 0
  # shellcheck disable=SC2086 # one pid a word
  kill -TERM $pids 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    pids=$(tagged_pids)
    [[ -z $pids ]] && return 0
    sleep 0.1
  done
  log "killing what did not end on SIGTERM: $(echo $pids)"
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
}
