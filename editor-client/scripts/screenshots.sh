#!/usr/bin/env bash
# The README's and the Marketplace page's screenshots, taken again in a real VS Code (`make
# screenshots`): runs the part of the e2e that takes them (test/e2e/screenshots.test.ts: a run in
# progress, the history page; test/e2e/review.test.ts: the review diff), then copies the chosen
# shots from test-results/e2e/ to docs/images/, where the README and the extension's README show
# them. Nothing is copied unless every test passed and every shot is there, so a failed run never
# replaces a good picture with a broken one.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# docs/images name <- the e2e's shot in test-results/e2e/
SHOTS=(
  "run-in-progress.png=shot-run-in-progress.png"
  "history.png=shot-history.png"
  "review.png=80-review-diff.png"
)

bash "$CLIENT_DIR/scripts/e2e.sh" screenshots review &
wait $! || die "the e2e failed: no screenshot was copied (see test-results/e2e/)"

results="$REPO_ROOT/test-results/e2e"
for pair in "${SHOTS[@]}"; do
  shot=${pair#*=}
  [[ -s "$results/$shot" ]] || die "the e2e passed but took no $shot: no screenshot was copied"
done
mkdir -p "$REPO_ROOT/docs/images"
for pair in "${SHOTS[@]}"; do
  name=${pair%%=*}
  shot=${pair#*=}
  cp "$results/$shot" "$REPO_ROOT/docs/images/$name"
  log "docs/images/$name <- test-results/e2e/$shot"
done
