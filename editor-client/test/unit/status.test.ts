import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { IDLE_VIEW, StatusBoard, describeCosts, describeStatus, formatStatusText, toneOf } from "../../src/status";
import { status } from "./fixtures";

describe("formatStatusText", () => {
  it("names a queued run's position in its queue", () => {
    const queue = { id: "q-1", position: 2, total: 5 };
    assert.equal(formatStatusText(status({ queue })), "$(sync~spin) Ralph: 2/5 add-x · it 2 · 3/10");
  });

  it("shows a running run with a spinner, its iteration and progress", () => {
    assert.equal(formatStatusText(status()), "$(sync~spin) Ralph: add-x · it 2 · 3/10");
  });

  it("shows a run waiting for a rate limit to reset", () => {
    const waiting = status({
      reason: "rate limited (usage limit reached); retrying at 14:05",
      phase: "waiting",
      waiting: { kind: "rateLimit", until: "2026-11-24T14:05:00Z" },
    });
    assert.equal(formatStatusText(waiting), "$(watch) Ralph: add-x · it 2 · rate limited · 3/10");
    assert.match(describeStatus(waiting), /retrying at 14:05/);
  });

  it("reads the phase, never the English reason", () => {
    // A reason that reads like a wait but a status that says the agent works: it works.
    const working = status({ reason: "rate limited earlier; waiting for the network is over", phase: "agent" });
    assert.equal(formatStatusText(working), "$(sync~spin) Ralph: add-x · it 2 · 3/10");
    const verifying = status({ reason: "verifying: make test", phase: "verifying", completed: 10 });
    assert.equal(formatStatusText(verifying), "$(beaker) Ralph: add-x · verifying · 10/10");
  });

  it("shows a run whose agent waits for the network", () => {
    const waiting = status({
      reason: "waiting for the network: Reconnecting... waiting for network",
      phase: "waiting",
      waiting: { kind: "network" },
    });
    assert.equal(
      formatStatusText(waiting),
      "$(debug-disconnect) Ralph: add-x · it 2 · waiting for network · 3/10",
    );
    assert.match(describeStatus(waiting), /Reconnecting\.\.\. waiting for network/);
  });

  it("shows success with a check", () => {
    assert.equal(
      formatStatusText(status({ state: "succeeded", completed: 10, total: 10 })),
      "$(check) Ralph: add-x succeeded 10/10",
    );
  });

  it("gives each final state its icon", () => {
    assert.equal(formatStatusText(status({ state: "stopped" })), "$(debug-stop) Ralph: add-x stopped 3/10");
    assert.equal(formatStatusText(status({ state: "stuck" })), "$(warning) Ralph: add-x stuck 3/10");
    assert.equal(formatStatusText(status({ state: "exhausted" })), "$(warning) Ralph: add-x exhausted 3/10");
    assert.equal(formatStatusText(status({ state: "failed" })), "$(error) Ralph: add-x failed 3/10");
  });

  it("maps states to tones", () => {
    assert.equal(toneOf(status()), "normal");
    assert.equal(toneOf(status({ state: "succeeded" })), "normal");
    assert.equal(toneOf(status({ state: "stuck" })), "warning");
    assert.equal(toneOf(status({ state: "failed" })), "error");
  });
});

describe("describeStatus", () => {
  it("includes the reason and a reported cost", () => {
    const text = describeStatus(
      status({ state: "stuck", reason: "no task checked in 3 iterations", costUsd: 0.4567 }),
    );
    assert.equal(text, "add-x: stuck · iteration 2/20 · 3/10 tasks · $0.46\nno task checked in 3 iterations");
  });
});

describe("StatusBoard", () => {
  it("is idle before any status", () => {
    assert.deepEqual(new StatusBoard().view(), IDLE_VIEW);
  });

  it("shows the latest running run, counting the others", () => {
    const board = new StatusBoard();
    board.update(status({ change: "a", runId: "r-1" }));
    board.update(status({ change: "b", runId: "r-2", iteration: 5 }));
    assert.equal(board.view().text, "$(sync~spin) Ralph: b · it 5 · 3/10 (+1)");
    assert.match(board.view().tooltip, /^b: running/);
    assert.match(board.view().tooltip, /\n\na: running/);
  });

  it("prefers a running run over a newer finished one", () => {
    const board = new StatusBoard();
    board.update(status({ change: "a" }));
    board.update(status({ change: "b", runId: "r-2", state: "succeeded", completed: 10 }));
    assert.equal(board.view().text, "$(sync~spin) Ralph: a · it 2 · 3/10");
  });

  it("forgets a run whose server went away, and takes it back when a new server attaches", () => {
    const board = new StatusBoard();
    board.update(status({ change: "a", runId: "r-1" }));
    board.remove(status({ change: "a" }));
    assert.deepEqual(board.view(), IDLE_VIEW);
    assert.equal(board.update(status({ change: "a", runId: "r-1", iteration: 3 })), true);
    assert.equal(board.view().text, "$(sync~spin) Ralph: a · it 3 · 3/10");
  });

  it("shows an interrupted run as an error", () => {
    assert.equal(toneOf(status({ state: "interrupted" })), "error");
    assert.match(formatStatusText(status({ state: "interrupted" })), /interrupted/);
  });

  it("shows the last final state once nothing runs", () => {
    const board = new StatusBoard();
    board.update(status());
    board.update(status({ state: "succeeded", completed: 10, iteration: 4 }));
    assert.equal(board.view().text, "$(check) Ralph: add-x succeeded 10/10");
    assert.equal(board.running().length, 0);
  });

  it("ignores a late running status of a run that already ended", () => {
    const board = new StatusBoard();
    board.update(status({ state: "stopped" }));
    assert.equal(board.update(status({ state: "running" })), false);
    assert.equal(board.view().text, "$(debug-stop) Ralph: add-x stopped 3/10");
    // a new run of the same change is not late
    assert.equal(board.update(status({ runId: "r-2" })), true);
    assert.equal(board.running().length, 1);
  });

  it("keeps changes of different roots apart", () => {
    const board = new StatusBoard();
    board.update(status({ root: "file:///a" }));
    board.update(status({ root: "file:///b", runId: "r-2" }));
    assert.equal(board.running().length, 2);
    assert.equal(board.get("add-x", "file:///a")?.runId, "r-1");
    assert.equal(board.get("add-x")?.runId, "r-2");
  });
});

describe("describeSandbox", () => {
  it("says what a sandboxed run may write, hides and reaches, and says off as off", () => {
    const sandbox = { kind: "bwrap" as const, writable: ["/p", "/tmp/x"], hidden: ["/h/.ssh"], allowedDomains: [] };
    const said = describeStatus(status({ sandbox }));
    assert.match(said, /\nsandbox: bwrap — writable: \/p, \/tmp\/x; hidden: \/h\/\.ssh; domains: none$/);
    assert.match(describeStatus(status({ sandbox: null })), /\nsandbox: off$/);
    assert.doesNotMatch(describeStatus(status()), /sandbox/);
  });
});

describe("describeCosts (v5, SPEC §15)", () => {
  it("says the model, the total, the cost per verified task and the spend without progress", () => {
    const costs = {
      totalUsd: 0.42, perVerifiedTaskUsd: 0.14, verifiedTasks: 3, tasksChecked: 3,
      noProgressUsd: 0.05, noProgressIterations: 1, estimated: false,
    };
    const text = describeStatus(status({ model: "claude-sonnet-4-5", costs }));
    assert.match(
      text,
      /model claude-sonnet-4-5 · \$0\.4200 · \$0\.1400 per verified task · \$0\.0500 on 1 iteration without progress/,
    );
  });

  it("shows nothing for an agent that reported nothing, never $0.0000", () => {
    const costs = {
      totalUsd: null, perVerifiedTaskUsd: null, verifiedTasks: null, tasksChecked: 0,
      noProgressUsd: null, noProgressIterations: 2, estimated: false,
    };
    assert.equal(describeCosts(status({ costs })), null);
    assert.doesNotMatch(describeStatus(status({ costs, model: null })), /\$0\.0000/);
    assert.equal(describeCosts(status({ costs, model: "m" })), "model m");
  });
});
