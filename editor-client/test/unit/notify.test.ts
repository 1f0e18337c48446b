import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { QueueEndNotifier, RunEndNotifier } from "../../src/notify";
import { queueStatus, status } from "./fixtures";

describe("QueueEndNotifier", () => {
  it("tells once, when the queue ends, what succeeded and what did not and why", () => {
    const n = new QueueEndNotifier();
    assert.equal(n.observe(queueStatus()), undefined);
    const ended = queueStatus({
      state: "done",
      endedAt: "2026-11-24T08:00:00Z",
      reason: "2/3 succeeded",
    });
    ended.items[1] = { ...ended.items[1]!, state: "stuck", reason: "verification fails (make test exited 2); no progress in 3 iterations" };
    ended.items[2] = { ...ended.items[2]!, state: "succeeded", reason: "every task is checked (3/3)" };
    const note = n.observe(ended);
    assert.equal(note?.severity, "warning");
    assert.equal(
      note?.message,
      "Ralph: queue ended · 2/3 succeeded (verified) · b stuck: verification fails (make test exited 2); no progress in 3 iterations",
    );
    assert.equal(note?.change, "b");
    assert.equal(n.observe(ended), undefined);
  });

  it("a run of a queue gets no notification of its own", () => {
    const n = new RunEndNotifier();
    const queue = { id: "q-1", position: 1, total: 2 };
    assert.equal(n.observe(status({ runId: "r9", queue })), undefined);
    assert.equal(n.observe(status({ runId: "r9", state: "succeeded", queue })), undefined);
  });
});

describe("RunEndNotifier", () => {
  it("tells once when a run it saw running ends, information for success", () => {
    const n = new RunEndNotifier();
    assert.equal(n.observe(status({ runId: "r1" })), undefined);
    const note = n.observe(status({ runId: "r1", state: "succeeded", completed: 10, reason: "every task is checked (10/10)" }));
    assert.deepEqual(note, {
      severity: "information",
      message: "Ralph: add-x succeeded (10/10 tasks): every task is checked (10/10)",
      change: "add-x",
      root: status().root,
    });
    // The same final status again (a re-sent notification, the status read after a restart): no second note.
    assert.equal(n.observe(status({ runId: "r1", state: "succeeded", completed: 10 })), undefined);
  });

  it("warns for any other end, with the reason", () => {
    const n = new RunEndNotifier();
    n.observe(status({ runId: "r2" }));
    const note = n.observe(status({ runId: "r2", state: "stuck", reason: "blocked: 5.2 needs the token" }));
    assert.equal(note?.severity, "warning");
    assert.match(note?.message ?? "", /stuck \(3\/10 tasks\): blocked: 5\.2 needs the token$/);
  });

  it("says nothing of runs that ended before it saw them", () => {
    const n = new RunEndNotifier();
    assert.equal(n.observe(status({ runId: "old", state: "failed", reason: "x" })), undefined);
  });
});

describe("RunEndNotifier on a branch", () => {
  it("names the run and its branch when the run ended on one (Review, Merge)", () => {
    const n = new RunEndNotifier();
    const worktree = { branch: "ralph/add-x", root: null, tasksUri: null };
    n.observe(status({ runId: "r1", state: "running", worktree }));
    const note = n.observe(status({ runId: "r1", state: "succeeded", worktree }));
    assert.equal(note?.branch, "ralph/add-x");
    assert.equal(note?.runId, "r1");
    const plain = new RunEndNotifier();
    plain.observe(status({ runId: "r2", state: "running" }));
    const none = plain.observe(status({ runId: "r2", state: "succeeded" }));
    assert.ok(none && none.branch === undefined && none.runId === undefined);
  });
});

describe("planned (SPEC §14)", () => {
  it("a planning run's end asks for approval and lists its open questions", () => {
    const n = new RunEndNotifier();
    n.observe(status({ runId: "p1", kind: "plan" }));
    const note = n.observe(
      status({ runId: "p1", kind: "plan", state: "planned", questions: ["Localized?", "Which locale first?"], reason: "passes the gate" }),
    );
    assert.equal(note?.severity, "information");
    assert.match(note?.message ?? "", /is planned: approve it \(Approve and run\), revise or discard it in its proposal\.md/);
    assert.match(note?.message ?? "", /2 open question\(s\): Localized\? Which locale first\?$/);
  });
});
