import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ReviewBundle } from "../../src/protocol";
import { commentGuidance, reviewText, reviewTriples } from "../../src/review";
import { reviewHtml } from "../../src/views/reviewHtml";

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

describe("the review in VS Code's diff editors", () => {
  it("pairs each file's merge-base text with its tip text, none where a side has no file", () => {
    const b = bundle({
      files: [
        { status: "M", path: "calc.py" },
        { status: "A", path: "new.py" },
        { status: "D", path: "old.py" },
      ],
    });
    assert.deepEqual(reviewTriples(b), [
      { path: "calc.py", status: "M", original: b.base, modified: b.tip },
      { path: "new.py", status: "A", original: null, modified: b.tip },
      { path: "old.py", status: "D", original: b.base, modified: null },
    ]);
  });

  it("puts the task → iteration → commit map, the verification and the cost beside it, as a page", () => {
    const page = (over: Partial<ReviewBundle> = {}) => reviewHtml({ bundle: bundle(over), nonce: "N0", cspSource: "vscode-webview:" });
    const html = page();
    assert.match(html, /<table class="iterations"><thead><tr><th>iteration<\/th><th>tasks checked<\/th><th>commit<\/th><th>files<\/th><\/tr><\/thead>/);
    assert.match(html, /<tr><td>1<\/td><td>2<\/td><td><code>cccccccccccc<\/code><\/td><td><code>calc\.py<\/code><\/td><\/tr>/);
    assert.match(html, /<li><code>make test<\/code>: <span class="ok">passed<\/span><\/li>/);
    assert.doesNotMatch(html, /Cost/);
    assert.match(page({ costUsd: 0.5 }), /Cost: \$0\.5000/);
    const failed = page({ verification: [{ command: "pytest", exitCode: 1, durationMs: 1, outputTail: "" }] });
    assert.match(failed, /<code>pytest<\/code>: <span class="bad">failed \(exit 1\)<\/span>/);
    assert.match(page({ verification: null }), /The run did not verify\./);
    // No script, nothing loaded from anywhere: the page's policy allows its own style only.
    assert.match(html, /content="default-src 'none'; style-src vscode-webview: 'nonce-N0';"/);
    assert.doesNotMatch(html, /<script/);
  });

  it("escapes every text of the repository on the page", () => {
    const hostile = "<img src=x onerror=alert(1)>";
    const html = reviewHtml({
      bundle: bundle({
        files: [{ status: "M", path: hostile }],
        commits: [{ commit: "d".repeat(40), subject: hostile }],
        iterations: [{ n: 1, tasksChecked: 1, commit: null, filesChanged: [hostile], costUsd: null }],
      }),
      nonce: "N0",
      cspSource: "vscode-webview:",
    });
    assert.doesNotMatch(html, /<img/);
    assert.equal(html.split("&lt;img src=x onerror=alert(1)&gt;").length - 1, 3);
  });

  it("turns comments into guidance naming the path, the line(s) and the quoted code", () => {
    const text = commentGuidance("add-x", "ralph/add-x", [
      { path: "calc.py", startLine: 3, endLine: 3, quoted: ["def add(a, b):"], body: "Name it plus." },
      { path: "src/m.py", startLine: 7, endLine: 8, quoted: ["x = 1", "y = 2"], body: "One line,\nplease." },
    ]);
    assert.equal(
      text,
      [
        "Review comments on ralph/add-x (change add-x); address each one:",
        "1. calc.py line 3:\n    > def add(a, b):\n   Name it plus.",
        "2. src/m.py lines 7-8:\n    > x = 1\n    > y = 2\n   One line,\n   please.",
      ].join("\n"),
    );
  });
});
