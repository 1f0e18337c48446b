import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HistoryRecord } from "../../src/protocol";
import { chartPoints, chartSvg, historyHtml } from "../../src/views/historyHtml";
import { durationOf, escapeHtml } from "../../src/views/html";
import { coalesced } from "../../src/views/soon";
import { changeDescription, queueItemDescription, queueLabel, relativeTime, runLabel } from "../../src/views/treeModel";
import { change, queueStatus, status } from "./fixtures";

function record(over: Partial<HistoryRecord> = {}): HistoryRecord {
  const it = (n: number, checked: number, cost: number | null) => ({
    n,
    startedAt: `2026-11-24T07:0${n}:00Z`,
    endedAt: `2026-11-24T07:0${n}:30Z`,
    exitCode: 0,
    tasksChecked: checked,
    costUsd: cost,
    numTurns: 4,
    usage: null,
    verification: n === 3 ? [{ command: "make test", exitCode: 0, durationMs: 300, outputTail: "OK" }] : null,
    refusals: n === 2 ? [{ tool: "Bash", input: "make build", rule: "Bash(make build)" }] : [],
    checkpoint: { ref: `refs/ralph/x/r/${n}`, commit: "abc" },
    outputUri: `file:///p/.ralph/runs/r/iteration-${n}.log`,
    promptUri: null,
  });
  return {
    runId: "r",
    change: "add-x",
    root: "file:///p",
    startedAt: "2026-11-24T07:01:00Z",
    endedAt: "2026-11-24T07:03:30Z",
    state: "succeeded",
    reason: "every task is checked (8/8); verification passed (make test)",
    transitions: [],
    iterations: [it(1, 3, 0.1), it(2, 2, 0.25), it(3, 3, 0.05)],
    guidance: [],
    ...over,
  };
}

describe("the history page", () => {
  it("labels an estimated cost as an estimate, in the summary and the iteration's cell", () => {
    const base = record();
    const its = base.iterations.map((i) => ({ ...i, costEstimated: true }));
    const html = historyHtml({ change: "add-x", runs: [{ ...base, iterations: its }], total: 8, nonce: "n", cspSource: "s" });
    assert.match(html, /without progress \(estimate\)/);
    assert.match(html, /\$0\.1000 \(estimate\)<\/td>/);
    assert.doesNotMatch(historyHtml({ change: "add-x", runs: [base], total: 8, nonce: "n", cspSource: "s" }), /estimate/);
    assert.match(runLabel({ ...base, iterations: its }), /\$0\.40 \(estimate\)/);
  });

  it("says nothing of money in a run's header when the agent reported no cost (the demo)", () => {
    const base = record();
    for (const cost of [0, null]) {
      const its = base.iterations.map((i) => ({ ...i, costUsd: cost }));
      const html = historyHtml({ change: "add-x", runs: [{ ...base, iterations: its }], total: 8, nonce: "n", cspSource: "s" });
      const header = html.match(/<h2>[\s\S]*?<\/h2>/)?.[0] ?? "";
      assert.match(header, /3 iterations/);
      assert.doesNotMatch(header, /\$|—|without progress|per verified task/);
    }
    const paid = historyHtml({ change: "add-x", runs: [base], total: 8, nonce: "n", cspSource: "s" });
    assert.match(paid.match(/<h2>[\s\S]*?<\/h2>/)?.[0] ?? "", /\$0\.4000 · \$0\.0500 per verified task/);
  });

  it("shows the merge commit of a merged run, and why a parked one waits", () => {
    const merge = { into: "main", strategy: "merge", commit: "0123456789abcdef0123", reason: "merged", conflicts: [], outputTail: null, at: "2026-11-24T08:00:00Z" };
    const merged = historyHtml({ change: "add-x", runs: [record({ branchState: "merged", merge })], total: 8, nonce: "n", cspSource: "s" });
    assert.match(merged, /merged into main as <code title="0123456789abcdef0123">0123456789ab<\/code>/);
    const parked = { ...merge, commit: null, reason: "conflicts with main in <a.py>", conflicts: ["a.py"] };
    const waits = historyHtml({ change: "add-x", runs: [record({ branchState: "needs-review", merge: parked })], total: 8, nonce: "n", cspSource: "s" });
    assert.match(waits, /needs review: conflicts with main in &lt;a\.py&gt;/);
    assert.doesNotMatch(historyHtml({ change: "add-x", runs: [record()], total: 8, nonce: "n", cspSource: "s" }), /class="merge/);
  });

  it("charts one point per iteration, tasks checked cumulatively", () => {
    const points = chartPoints(record().iterations);
    assert.deepEqual(points.map((p) => p.checked), [3, 5, 8]);
    const svg = chartSvg(points, 8);
    assert.equal(svg.match(/<circle class="point"/g)?.length, 3);
    assert.equal(svg.match(/<rect class="cost"/g)?.length, 3);
    assert.match(svg, /iteration 2: 5\/8 tasks/);
  });

  it("has a row per iteration with verification, refusals and links, and a strict CSP", () => {
    const html = historyHtml({ change: "add-x", runs: [record()], total: 8, nonce: "N0nce", cspSource: "vscode-webview:" });
    assert.equal(html.match(/<tr class="iteration">/g)?.length, 3);
    assert.match(html, /✓ make test/);
    assert.match(html, /1 refused/);
    assert.match(html, /data-action="open" data-uri="file:\/\/\/p\/\.ralph\/runs\/r\/iteration-1\.log">output</);
    assert.match(html, /data-action="diff" data-run="r" data-iteration="3">diff</);
    assert.doesNotMatch(html, /prompt<\/a>/); // no prompt file: no link
    assert.match(html, /content="default-src 'none'; style-src vscode-webview: 'nonce-N0nce'; script-src 'nonce-N0nce';/);
    assert.equal(html.match(/<script nonce="N0nce">/g)?.length, 1);
    assert.doesNotMatch(html, /https?:\/\/(?!www\.w3)/); // nothing remote
  });

  it("escapes what the record holds", () => {
    const html = historyHtml({ change: "<x>", runs: [record({ reason: '<img src=x onerror="1">' })], total: 8, nonce: "n", cspSource: "s" });
    assert.doesNotMatch(html, /<img/);
    assert.equal(escapeHtml(`a&<>"'`), "a&amp;&lt;&gt;&quot;&#39;");
  });

  it("says when there is no run", () => {
    assert.match(historyHtml({ change: "add-x", runs: [], total: 8, nonce: "n", cspSource: "s" }), /No run of add-x yet/);
  });

  it("writes durations for people", () => {
    assert.equal(durationOf("2026-11-24T07:00:00Z", "2026-11-24T07:00:03.400Z"), "3.4 s");
    assert.equal(durationOf("2026-11-24T07:00:00Z", "2026-11-24T07:02:05Z"), "2 min 5 s");
    assert.equal(durationOf("2026-11-24T07:00:00Z", null), "—");
  });
});

describe("the Ralph view's rows", () => {
  it("shows progress, and for a running change its iteration, phase and cost", () => {
    const info = change("add-x", { completed: 3, total: 8 });
    assert.equal(changeDescription(info, undefined), "3/8");
    assert.equal(changeDescription(info, status({ costUsd: 0.42 })), "3/8 · iteration 2 · $0.42");
    assert.equal(changeDescription(info, status({ costUsd: 0.42, costEstimated: true })), "3/8 · iteration 2 · $0.42 (estimate)");
    assert.equal(changeDescription(info, status({ phase: "verifying" })), "3/8 · verifying");
    assert.equal(changeDescription(info, status({ phase: "waiting", waiting: { kind: "rateLimit" } })), "3/8 · rate limited");
    assert.equal(changeDescription(change("d", { completed: 8, total: 8 }), status({ state: "succeeded" })), "8/8 · done");
  });

  it("labels a run with state, iterations, cost, duration and a short relative time", () => {
    // The row was cut ("Nov 2…") with the full date: a relative time fits, the tooltip has the rest.
    const now = Date.parse("2026-11-24T09:01:00Z");
    const label = runLabel(record(), "en-GB", now);
    assert.equal(label, "succeeded · 3 it · $0.40 · 2 min 30 s · 2 h ago");
    const merged = runLabel(record({ branchState: "merged" }), "en-GB", now);
    assert.equal(merged, "succeeded (merged) · 3 it · $0.40 · 2 min 30 s · 2 h ago");
    assert.match(runLabel(record({ branchState: "needs-review" }), "en-GB", now), /^succeeded \(needs-review\) · /);
    assert.equal(relativeTime("2026-11-24T09:00:30Z", now), "just now");
    assert.equal(relativeTime("2026-11-24T08:56:00Z", now), "5 min ago");
    assert.equal(relativeTime("2026-11-21T09:01:00Z", now), "3 d ago");
    assert.equal(relativeTime("2026-09-01T09:01:00Z", now), "12 wk ago");
    assert.equal(relativeTime("not a date", now), "");
  });

  it("shows a queue: its position, and each change pending, running or done", () => {
    const q = queueStatus();
    assert.equal(queueLabel(q), "Queue 2/3 · running");
    assert.deepEqual(q.items.map((i) => queueItemDescription(i)), ["succeeded · 1 it", "running · 1/3", "pending"]);
  });
});

describe("nothing polls", () => {
  it("no client source starts a repeating timer", async () => {
    const fs = await import("node:fs");
    const path = await import("node:path");
    const src = path.resolve("src"); // unit-test.sh runs from editor-client/
    assert.ok(fs.existsSync(path.join(src, "extension.ts")), `run from editor-client/ (no ${src})`);
    const files = (fs.readdirSync(src, { recursive: true }) as string[]).filter((f) => f.endsWith(".ts"));
    assert.ok(files.length > 10, `sources found: ${files.length}`);
    const polling = files.filter((f) => /\bsetInterval\s*\(/.test(fs.readFileSync(path.join(src, f), "utf8")));
    assert.deepEqual(polling, [], "the views refresh from ralph/runStatus and file events, never on a timer");
  });
});

describe("a refresh per burst", () => {
  it("runs once for a burst of triggers, again for a later one, and not after cancel", async () => {
    let runs = 0;
    const soon = coalesced(() => runs++, 20);
    for (let i = 0; i < 50; i++) {
      soon();
    }
    assert.equal(runs, 0, "nothing runs before the burst's delay");
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(runs, 1);
    soon();
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(runs, 2);
    soon();
    soon.cancel();
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(runs, 2, "a cancelled burst never runs");
  });
});
