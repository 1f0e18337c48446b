// Money on every surface of the extension, as the server writes it (SPEC §15): a tiny cost that
// was reported keeps its digits, and a review round's cost is part of a run's total.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatHistory } from "../../src/history";
import { costsLine, usd } from "../../src/money";
import type { HistoryRecord, RunCosts } from "../../src/protocol";
import { describeCosts } from "../../src/status";
import { historyHtml } from "../../src/views/historyHtml";
import { money } from "../../src/views/html";
import { changeDescription, runLabel } from "../../src/views/treeModel";
import { change, status } from "./fixtures";

const COSTS: RunCosts = {
  totalUsd: 0.22, perVerifiedTaskUsd: 0.11, verifiedTasks: 2, tasksChecked: 2,
  noProgressUsd: 0.02, noProgressIterations: 2, estimated: false, reviewUsd: 0.04,
};

function run(over: Partial<HistoryRecord> = {}): HistoryRecord {
  return {
    runId: "r-1", change: "add-x", root: "file:///p", state: "succeeded", reason: "every task is checked",
    startedAt: "2026-12-01T10:00:00Z", endedAt: "2026-12-01T10:01:00Z", transitions: [], guidance: [],
    iterations: [
      { n: 1, startedAt: "2026-12-01T10:00:00Z", endedAt: "2026-12-01T10:00:30Z", exitCode: 0, tasksChecked: 2, costUsd: 0.1 },
    ] as HistoryRecord["iterations"],
    ...over,
  };
}

const REVIEWS = [
  { round: 1, reviewer: "claude", model: "claude-haiku-4-5", verdict: "rejected", tasksAdded: ["- [ ] 9.1 <b>test</b> the scenario"], refusals: [], costUsd: 0.03, exitCode: 0, startedAt: "", endedAt: "" },
  { round: 2, reviewer: "claude", model: null, verdict: "approved", tasksAdded: [], refusals: ["src/app.py"], costUsd: 0.02, exitCode: 0, startedAt: "", endedAt: "" },
];

describe("money", () => {
  it("keeps two significant digits of a cost too small for the decimals, as the server's usd()", () => {
    assert.equal(usd(0.0022), "$0.0022");
    assert.equal(usd(0.000039), "$0.000039");
    assert.equal(usd(0), "$0.0000");
    assert.equal(usd(0.003, 2), "$0.0030");
    assert.equal(money(0.000039), "$0.000039");
    assert.equal(money(12.5), "$12.50");
    assert.equal(changeDescription(change("add-x", { completed: 3, total: 10 }), status({ costUsd: 0.0004 })), "3/10 · iteration 2 · $0.00040");
  });

  it("says a run's costs as the end line does, the review's part named", () => {
    assert.equal(costsLine(COSTS), "$0.2200 (review $0.0400) · $0.1100 per verified task · $0.0200 on 2 iterations without progress");
    assert.equal(costsLine({ ...COSTS, reviewUsd: null, perVerifiedTaskUsd: null, verifiedTasks: null, estimated: true }),
      "$0.2200 · $0.1100 per task, unverified · $0.0200 on 2 iterations without progress (estimate)");
    assert.equal(costsLine({ ...COSTS, totalUsd: 0 }), "");
    assert.equal(describeCosts(status({ costs: COSTS, model: "m" })), `model m · ${costsLine(COSTS)}`);
  });

  it("counts the review rounds in a run's total on the history page, its row and its Markdown", () => {
    const html = historyHtml({ change: "add-x", runs: [run({ reviews: REVIEWS })], total: 2, nonce: "n", cspSource: "s" });
    const header = html.match(/<h2>[\s\S]*?<\/h2>/)?.[0] ?? "";
    assert.match(header, /\$0\.1500 \(review \$0\.0500\) · \$0\.0750 per task, unverified/);
    assert.match(runLabel(run({ reviews: REVIEWS })), / · \$0\.15 · /);
    assert.match(formatHistory("add-x", [run({ reviews: REVIEWS })]), /\| 1 \| \$0\.15 \|/);
    assert.match(runLabel(run()), / · \$0\.10 · /);
    // A record is a workspace file: rounds that are not objects, or costs that are not costs, add nothing.
    const hostile = run({ reviews: [null, 3, "x", { costUsd: -1 }, { costUsd: "0.5" }, { costUsd: 0.05 }] as never });
    assert.match(runLabel(hostile), / · \$0\.15 · /);
    assert.match(formatHistory("add-x", [hostile]), /\| 1 \| \$0\.15 \|/);
    assert.match(runLabel(run({ reviews: "not a list" as never })), / · \$0\.10 · /);
  });

  it("shows each review round on the history page, every text escaped", () => {
    const html = historyHtml({ change: "add-x", runs: [run({ reviews: REVIEWS })], total: 2, nonce: "n", cspSource: "s" });
    assert.match(html, /Review: 2 rounds, approved last/);
    assert.match(html, /<td>1<\/td><td>claude<\/td><td>claude-haiku-4-5<\/td><td><span class="bad" title="">rejected<\/span><\/td>/);
    assert.match(html, /title="- \[ \] 9\.1 &lt;b&gt;test&lt;\/b&gt; the scenario">1<\/span>/);
    assert.match(html, /<span class="bad" title="src\/app\.py">1 undone<\/span>/);
    assert.ok(!html.includes("<b>test</b>"));
    const hostile = historyHtml({ change: "add-x", runs: [run({ reviews: [null, 3, { verdict: ["x"] }] as never })], total: 2, nonce: "n", cspSource: "s" });
    assert.match(hostile, /Review: 1 round, \? last/);
    assert.doesNotMatch(historyHtml({ change: "add-x", runs: [run()], total: 2, nonce: "n", cspSource: "s" }), /Review:/);
  });
});
