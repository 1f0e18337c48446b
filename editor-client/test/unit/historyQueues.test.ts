// Issue 30, item 6: the history page shows the queues a change's runs belong to, each item with
// its state, reason, iterations, cost, duration and branch, and a link to each other change's
// history; a planted queue record never puts markup into the page.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { QueueStatus } from "../../src/protocol";
import { historyHtml } from "../../src/views/historyHtml";
import { cleanQueue, queuesOf } from "../../src/views/queueHtml";

const MARK = "<img src=x data-planted>";

function queue(over: Partial<QueueStatus> = {}): QueueStatus {
  return {
    queueId: "q-1",
    root: "file:///ws",
    state: "done",
    reason: "1/2 succeeded",
    startedAt: "2025-01-01T10:00:00Z",
    endedAt: "2025-01-01T10:05:00Z",
    parallel: 1,
    stopOnFailure: false,
    maxCostUsd: 2,
    costUsd: 0.75,
    position: 2,
    total: 2,
    items: [
      { change: "add-x", state: "succeeded", reason: "all tasks checked and verified", runId: "r-1", iterations: 2, completed: 3, total: 3, costUsd: 0.5, startedAt: null, endedAt: null, durationS: 125, branch: "ralph/add-x" },
      { change: "add-y", state: "stuck", reason: "no task checked in 3 iterations", runId: "r-2", iterations: 3, completed: 0, total: 2, costUsd: 0.25, startedAt: null, endedAt: null, durationS: 40, branch: null },
    ],
    ...over,
  };
}

function page(queues: unknown[], change = "add-x"): string {
  return historyHtml({ change, runs: [], total: 3, nonce: "n", cspSource: "s", queues });
}

describe("the history page's queues", () => {
  it("lists each item of a queue holding the change: state, reason, iterations, cost, duration, branch", () => {
    const html = page([queue()]);
    assert.match(html, /<h2>Queues<\/h2>/);
    assert.match(html, /data-queue="q-1"/);
    assert.match(html, /1\/2 succeeded/);
    assert.match(html, /<td><strong>add-x<\/strong><\/td><td><span class="state">succeeded<\/span><\/td><td>all tasks checked and verified<\/td>\n<td>2 \(3\/3 tasks\)<\/td><td>\$0\.5000<\/td><td>2 min 5 s<\/td>\n<td>ralph\/add-x<\/td>/);
    assert.match(html, /<span class="state">stuck<\/span><\/td><td>no task checked in 3 iterations<\/td>\n<td>3 \(0\/2 tasks\)<\/td><td>\$0\.2500<\/td><td>40 s<\/td>\n<td>—<\/td>/);
    assert.match(html, /\$0\.7500 of \$2\.00/);
  });

  it("links the other changes to their history, not the page's own", () => {
    const html = page([queue()]);
    assert.match(html, /<a href="#" data-action="history" data-change="add-y"/);
    assert.ok(!html.includes('data-change="add-x"'));
    // the page's script passes the change on
    assert.match(html, /change: a\.dataset\.change/);
  });

  it("leaves out queues without the change, and shows no queue heading then", () => {
    assert.equal(queuesOf([queue()], "add-z").length, 0);
    assert.ok(!page([queue()], "add-z").includes("Queues"));
    assert.equal(queuesOf([queue()], null).length, 1);
  });

  it("escapes every value of a planted queue record and drops what is no queue", () => {
    const planted = {
      queueId: MARK,
      state: MARK,
      reason: MARK,
      startedAt: MARK,
      endedAt: MARK,
      costUsd: MARK,
      maxCostUsd: MARK,
      position: MARK,
      items: [
        { change: "add-x", state: MARK, reason: MARK, iterations: MARK, completed: MARK, total: MARK, costUsd: MARK, durationS: MARK, branch: MARK },
        { change: `${MARK}"'`, state: "running", branch: "b" },
        { change: 7 },
        null,
      ],
    };
    const html = page([planted, null, "x", { queueId: "q-2" }, { queueId: 3, items: [] }]);
    assert.ok(!html.includes("<img"), "an <img> reached the page");
    assert.ok(!html.includes("data-planted>"), "planted markup reached the page");
    assert.equal((html.match(/data-queue=/g) ?? []).length, 1);
    assert.equal(cleanQueue(planted)?.items.length, 2);
    assert.equal(cleanQueue(planted)?.total, 2);
  });
});
