import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RunEndNotifier } from "../../src/notify";
import { status } from "./fixtures";

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
