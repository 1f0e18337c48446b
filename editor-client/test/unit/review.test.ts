import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ReviewBundle } from "../../src/protocol";
import { reviewText } from "../../src/review";

function bundle(over: Partial<ReviewBundle> = {}): ReviewBundle {
  return {
    change: "add-x",
    runId: "r-1",
    branch: "ralph/add-x",
    into: "main",
    base: "b".repeat(40),
    tip: "t".repeat(40),
    files: [{ status: "M", path: "calc.py" }],
    diff: "diff --git a/calc.py b/calc.py\n+X = 1\n",
    diffTruncated: false,
    commits: [],
    iterations: [{ n: 1, tasksChecked: 2, commit: "c".repeat(40), filesChanged: ["calc.py"], costUsd: null }],
    verification: [{ command: "make test", exitCode: 0, durationMs: 5, outputTail: "ok" }],
    costUsd: null,
    state: "succeeded",
    branchState: null,
    merge: null,
    ...over,
  };
}

describe("the review document", () => {
  it("heads git's patch with the merge-base, the iteration → commit map and the verification", () => {
    const text = reviewText(bundle());
    assert.match(text, /^# review add-x run r-1: ralph\/add-x against main \(merge-base bbbbbbbbbbbb, tip tttttttttttt\)\n/);
    assert.match(text, /# iteration 1: 2 task\(s\) checked → cccccccccccc\n/);
    assert.match(text, /# verification: make test exit 0\n/);
    assert.match(text, /# 1 file\(s\):\n#   M calc\.py\ndiff --git a\/calc\.py b\/calc\.py\n\+X = 1\n$/);
  });

  it("says nothing of cost when none was reported, and names a parked branch", () => {
    assert.doesNotMatch(reviewText(bundle({ costUsd: 0 })), /cost/);
    assert.match(reviewText(bundle({ costUsd: 0.25 })), /# cost \$0\.2500/);
    assert.match(reviewText(bundle({ branchState: "needs-review" })), /# run succeeded, branch needs-review/);
  });
});
