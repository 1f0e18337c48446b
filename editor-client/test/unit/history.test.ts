import assert from "node:assert/strict";
import { describe, it, test } from "node:test";
import { cell, formatHistory, totalCost } from "../../src/history";
import type { HistoryIteration, HistoryRecord } from "../../src/protocol";
import { branchActions, perTask } from "../../src/views/historyHtml";

const record: HistoryRecord = {
  runId: "r-7",
  change: "add-x",
  root: "file:///ws",
  startedAt: "2025-01-01T10:00:00Z",
  endedAt: "2025-01-01T10:02:05Z",
  state: "stuck",
  reason: "no task checked in 3 iterations",
  transitions: [
    { state: "running", at: "2025-01-01T10:00:00Z", reason: null },
    { state: "stuck", at: "2025-01-01T10:02:05Z", reason: "no task checked in 3 iterations" },
  ],
  iterations: [
    { n: 1, startedAt: "2025-01-01T10:00:00Z", endedAt: "2025-01-01T10:00:40Z", exitCode: 0, tasksChecked: 2, costUsd: 0.25, numTurns: 7, usage: null },
    { n: 2, startedAt: "2025-01-01T10:00:40Z", endedAt: null, exitCode: null, tasksChecked: null, costUsd: null, numTurns: null, usage: null },
  ],
  guidance: [{ text: "use | pipes", at: "2025-01-01T10:01:00Z", deliveredIn: 2 }],
};

describe("formatHistory", () => {
  it("says when there is no run", () => {
    assert.match(formatHistory("add-x", []), /No run yet/);
  });

  it("lists runs with state, reason, times, iterations and cost", () => {
    const md = formatHistory("add-x", [record]);
    assert.ok(md.includes("| r-7 | stuck | no task checked in 3 iterations | 2025-01-01 10:00:00 UTC | 2025-01-01 10:02:05 UTC | 2 | $0.25 |"), md);
    assert.ok(md.includes("(2 min 5 s)"));
    assert.ok(md.includes("| 1 | 2025-01-01 10:00:00 UTC | 40 s | 0 | 2 | 7 | $0.25 |"));
    assert.ok(md.includes("| 2 | 2025-01-01 10:00:40 UTC | — | — | — | — | — |"));
    assert.ok(md.includes("delivered in iteration 2): use \\| pipes"));
  });

  it("sums the reported cost", () => {
    assert.equal(totalCost(record), 0.25);
    assert.equal(totalCost({ ...record, iterations: [] }), null);
  });

  it("escapes table-breaking text", () => {
    assert.equal(cell("a|b\nc *d*"), "a\\|b c \\*d\\*");
    assert.equal(cell(null), "—");
  });
});

test("the history page's cost is per verified task, counted as the CLI counts it", () => {
  const ok = [{ command: "make test", exitCode: 0, durationMs: 1, outputTail: "" }];
  const bad = [{ command: "make test", exitCode: 2, durationMs: 1, outputTail: "" }];
  const its = [
    { n: 1, tasksChecked: 2, costUsd: 0.3, verification: ok },
    { n: 2, tasksChecked: 2, costUsd: 0.3, verification: bad },
    { n: 3, tasksChecked: 1, costUsd: 0.3 },
  ] as HistoryIteration[];
  assert.equal(perTask(its, 0.9), " · $0.4500 per verified task");
  assert.equal(perTask([{ n: 1, tasksChecked: 3, verification: bad }] as HistoryIteration[], 0.2), " · no task verified");
  assert.equal(perTask([{ n: 1, tasksChecked: 4 }] as HistoryIteration[], 1), " · $0.2500 per task, unverified");
});

describe("the history page's Review and Merge of a run's branch", () => {
  it("offers both for a run that ended on a branch, neither once merged or without a branch", () => {
    const onBranch = { ...record, state: "succeeded", worktree: { branch: "ralph/add-x" } };
    const html = branchActions(onBranch);
    assert.match(html, /<code>ralph\/add-x<\/code>/);
    assert.match(html, new RegExp(`data-action="review" data-run="${record.runId}"`));
    assert.match(html, new RegExp(`data-action="merge" data-run="${record.runId}"`));
    assert.equal(branchActions({ ...onBranch, branchState: "merged" }), "");
    assert.equal(branchActions({ ...onBranch, state: "running" }), "");
    assert.equal(branchActions({ ...record, worktree: null }), "");
  });
});
