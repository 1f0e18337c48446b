// SPEC §15: the history page shows each iteration's receipt: its model (why, in its title), its
// tokens with the cached part apart, its cost and whether it is an estimate; nothing reported
// is a dash, never $0.0000.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HistoryRecord } from "../../src/protocol";
import { historyHtml } from "../../src/views/historyHtml";

function page(runs: unknown[]): string {
  return historyHtml({ change: "add-x", runs: runs as HistoryRecord[], total: 2, nonce: "n", cspSource: "s" });
}

const RUN = {
  runId: "r-1",
  change: "add-x",
  state: "succeeded",
  reason: "every task is checked",
  startedAt: "2026-12-01T10:00:00Z",
  endedAt: "2026-12-01T10:01:00Z",
  iterations: [
    {
      n: 1, tasksChecked: 0, costUsd: 0.01, costSource: "reported", exitCode: 0, numTurns: 2,
      model: "small", modelReason: "escalation 1/2: story 1 starts at the first model",
      usage: { inputTokens: 100, cachedInputTokens: 2000, cacheWriteTokens: 0, outputTokens: 10 },
    },
    {
      n: 2, tasksChecked: 1, costUsd: null, costSource: null, exitCode: 0, numTurns: 3,
      model: "<b>large</b>", modelReason: "escalation 2/2", usage: null,
    },
  ],
};

describe("the history page's receipts", () => {
  it("shows the model, why in its title, the tokens cached apart and the cost", () => {
    const html = page([RUN]);
    assert.match(html, /<th>model<\/th>/);
    assert.match(html, /<span title="escalation 1\/2: story 1 starts at the first model">small<\/span>/);
    assert.match(html, /title="tokens in 100, cached 2000, cache write 0, out 10">\$0\.0100</);
    assert.ok(!html.includes("<b>large</b>"), "a model name reached the page as markup");
    assert.match(html, /&lt;b&gt;large&lt;\/b&gt;/);
  });

  it("shows an estimate as one, and no cost as a dash", () => {
    const estimated = { ...RUN, iterations: [{ ...RUN.iterations[0], costSource: "estimated" }, RUN.iterations[1]] };
    const html = page([estimated]);
    assert.match(html, />\$0\.0100 \(estimate\)</);
    assert.match(html, /<td title="">—<\/td>/);
  });
});
