#!/usr/bin/env bash
# make demo: a Ralph run of the bundled demo agent over a scratch copy of examples/hello.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ralph-demo.XXXXXX")
cp -R examples/hello "$scratch/hello"
echo "ralph-lsp demo: a scratch copy of examples/hello is in $scratch/hello"
echo "The demo agent is a small script, not an AI: for each task it writes the code the task"
echo "names and checks it. The run succeeds only once the example's tests pass."
echo
.venv/bin/ralph-lsp changes --root "$scratch/hello"
echo
set +e
.venv/bin/ralph-lsp run add-greeting-cli --root "$scratch/hello" --agent demo "$@"
rc=$?
set -e
echo
.venv/bin/ralph-lsp changes --root "$scratch/hello"
echo
echo "History of the run (operator-only): $scratch/hello/.ralph/"
.venv/bin/ralph-lsp history add-greeting-cli --root "$scratch/hello"
exit $rc
