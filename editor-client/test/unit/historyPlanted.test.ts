// Issue 25, faults 5 and 9: a planted record.json never puts markup into the history page, and a
// damaged record (no iterations, odd types) renders with the rest instead of throwing.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HistoryRecord } from "../../src/protocol";
import { historyHtml } from "../../src/views/historyHtml";

const MARK = "<img src=x data-planted>";
const LINK = "<a href='file:///etc/passwd'>open</a>";

function page(runs: unknown[]): string {
  return historyHtml({ change: "add-x", runs: runs as HistoryRecord[], total: 3, nonce: "n", cspSource: "s" });
}

describe("a planted history record", () => {
  it("gets every value escaped: iteration n, tasks checked, states, everything", () => {
    const planted = {
      runId: "r-1",
      change: "add-x",
      state: MARK,
      reason: LINK,
      startedAt: "2025-01-01T10:00:00Z",
      endedAt: null,
      iterations: [
        { n: MARK, tasksChecked: LINK, costUsd: MARK, exitCode: MARK, numTurns: LINK, startedAt: MARK, endedAt: LINK },
        { n: 2, tasksChecked: 1, costUsd: 0.5, exitCode: 0, numTurns: 3, refusals: [{ rule: MARK }], verification: [{ command: MARK, exitCode: MARK, passed: false }] },
      ],
    };
    const html = page([planted]);
    assert.ok(!html.includes("<img"), "an <img> reached the page");
    assert.ok(!html.includes("<a href='file"), "a link reached the page");
    assert.ok(!html.includes("data-planted>"), "planted markup reached the page");
  });

  it("renders a record without iterations, and one whose iterations are not a list, with the rest", () => {
    const good = { runId: "r-good", change: "add-x", state: "succeeded", reason: "all done", startedAt: "2025-01-01T10:00:00Z", endedAt: null, iterations: [{ n: 1, tasksChecked: 3 }] };
    const html = page([{ runId: "r-none", state: "failed" }, { runId: "r-odd", state: "failed", iterations: "nope" }, [1, 2], null, good]);
    assert.match(html, /data-run="r-good"/);
    assert.match(html, /data-run="r-none"/);
    assert.match(html, /all done/);
  });
});
