// Issue 25: "Restore to here" on the history page. The markup (a button per iteration that has a
// checkpoint, attributes escaped) and the decision the extension makes on the page's message
// (refused while untrusted, confirmed in a modal naming what happens, the result naming the undo).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HistoryRecord, RestoreResult } from "../../src/protocol";
import { historyHtml } from "../../src/views/historyHtml";
import { COPY_ACTION, UNDO_ACTION, planRestore, planUndo, restoreOutcome } from "../../src/views/restore";

const REF = { change: "add-x", root: "file:///p" };

function iteration(n: number, checkpoint: unknown) {
  return { n, startedAt: null, endedAt: null, exitCode: 0, tasksChecked: 1, costUsd: null, numTurns: 1, checkpoint };
}

function page(runs: unknown[]): string {
  return historyHtml({ change: "add-x", runs: runs as HistoryRecord[], total: 3, nonce: "n", cspSource: "s" });
}

/** The restore buttons of a page: [runId, iteration] as their attributes hold them. */
function buttons(html: string): string[][] {
  return [...html.matchAll(/<button type="button" class="restore" data-action="restore" data-run="([^"]*)" data-iteration="([^"]*)"[^>]*>Restore to here<\/button>/g)].map((m) => [m[1] as string, m[2] as string]);
}

describe("the history page's Restore to here", () => {
  it("has a button for each iteration with a checkpoint (a commit as records hold it, or {ref, commit}), and none for the others", () => {
    const html = page([
      {
        runId: "r-2",
        state: "succeeded",
        iterations: [iteration(1, { ref: "refs/ralph/@a/add-x/r-2/1", commit: "c1" }), iteration(2, null), iteration(3, "0123abcd"), iteration(4, { ref: "refs/ralph/@a/add-x/r-2/4", commit: "c4" })],
      },
      { runId: "r-1", state: "failed", iterations: [iteration(1, null)] },
    ]);
    assert.deepEqual(buttons(html), [
      ["r-2", "1"],
      ["r-2", "3"],
      ["r-2", "4"],
    ]);
    // The page's script posts a click on any [data-action] element, buttons included.
    assert.match(html, /closest\("\[data-action\]"\)/);
  });

  it("escapes the run id it carries, and lets no markup out", () => {
    const runId = `r"><img src=x data-planted onerror='1'>&`;
    const html = page([{ runId, state: "failed", iterations: [iteration(1, { ref: "x", commit: "y" })] }]);
    assert.deepEqual(buttons(html), [["r&quot;&gt;&lt;img src=x data-planted onerror=&#39;1&#39;&gt;&amp;", "1"]]);
    assert.ok(!html.includes("<img"), "planted markup reached the page");
  });

  it("keeps the strict content security policy", () => {
    const html = page([{ runId: "r", state: "failed", iterations: [iteration(1, { ref: "x", commit: "y" })] }]);
    assert.match(html, /content="default-src 'none'; style-src s 'nonce-n'; script-src 'nonce-n'; img-src s;"/);
    assert.ok(!/ on[a-z]+=/.test(html.replace(/data-[a-z-]+="[^"]*"/g, "")), "an inline event handler (the CSP would block it)");
  });
});

describe("the extension's answer to a restore click", () => {
  const click = { action: "restore", runId: "r-7", iteration: 1 };

  it("asks in a modal what will happen, then restores that iteration of that run", () => {
    const plan = planRestore(REF, click, true);
    assert.equal(plan.kind, "confirm");
    if (plan.kind !== "confirm") {
      return;
    }
    assert.match(plan.message, /add-x/);
    assert.match(plan.message, /iteration 1 of run r-7/);
    assert.match(plan.detail, /work tree's files are put back as they were after iteration 1 of run r-7/);
    assert.match(plan.detail, /uncommitted work is first saved as an undo checkpoint/);
    assert.deepEqual(plan.params, { change: "add-x", root: "file:///p", runId: "r-7", iteration: 1 });
  });

  it("refuses while the workspace is untrusted, saying why", () => {
    const plan = planRestore(REF, click, false);
    assert.equal(plan.kind, "refuse");
    assert.match(plan.kind === "refuse" ? plan.message : "", /not trusted.*rewrites the work tree's files/);
    assert.equal(planUndo(REF, "refs/ralph/@a/add-x/@undo/1", false).kind, "refuse");
  });

  it("refuses a click that names no run or no whole iteration, and ignores other messages", () => {
    for (const bad of [{ action: "restore", iteration: 1 }, { action: "restore", runId: "r", iteration: Number.NaN }, { action: "restore", runId: "r", iteration: 0 }, { action: "restore", runId: "r", iteration: 1.5 }, { action: "restore", runId: "r", iteration: "1" }]) {
      assert.equal(planRestore(REF, bad, true).kind, "refuse", JSON.stringify(bad));
    }
    for (const other of [null, "restore", { action: "diff", runId: "r", iteration: 1 }, { action: "open", uri: "file:///x" }]) {
      assert.equal(planRestore(REF, other, true).kind, "ignore", JSON.stringify(other));
    }
  });

  it("names the undo in the result, with actions to undo or copy it; undo restores that checkpoint", () => {
    const result: RestoreResult = {
      runId: "r-7",
      restored: { ref: "refs/ralph/@a/add-x/r-7/1", commit: "c1" },
      undo: { ref: "refs/ralph/@a/add-x/@undo/2", commit: "u2" },
      written: ["openspec/changes/add-x/tasks.md"],
      removed: ["hello/cli.py", "tests/test_cli.py"],
      skipped: [],
    };
    const out = restoreOutcome(REF, result, "iteration 1 of run r-7");
    assert.equal(out.message, "Ralph: restored add-x to iteration 1 of run r-7: 1 file written, 2 removed. The state before is saved as refs/ralph/@a/add-x/@undo/2.");
    assert.equal(out.severity, "information");
    assert.equal(out.undo, "refs/ralph/@a/add-x/@undo/2");
    assert.deepEqual(out.actions, [UNDO_ACTION, COPY_ACTION]);
    const undo = planUndo(REF, out.undo, true);
    assert.deepEqual(undo.kind === "run" ? undo.params : undefined, { change: "add-x", root: "file:///p", checkpoint: "refs/ralph/@a/add-x/@undo/2" });
  });

  it("warns about the paths it left alone, and names the undo by commit when it has no ref", () => {
    const out = restoreOutcome(
      REF,
      { runId: "r", restored: { ref: null, commit: "c" }, undo: { ref: null, commit: "u123" }, written: [], removed: [], skipped: [{ path: "build/out", reason: "an ignored file is in the way" }] },
      "iteration 2 of run r",
    );
    assert.equal(out.severity, "warning");
    assert.match(out.message, /Left alone: build\/out \(an ignored file is in the way\)/);
    assert.equal(out.undo, "u123");
  });
});
