import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { changeRefFrom, changeRefFromTasksPath, isFinalState, isRunStatus } from "../../src/protocol";
import { RestartPolicy } from "../../src/restarts";
import { status } from "./fixtures";

describe("protocol", () => {
  it("reads a lens argument, or nothing for a palette call", () => {
    assert.deepEqual(changeRefFrom({ change: "a", root: "file:///ws" }), { change: "a", root: "file:///ws" });
    assert.deepEqual(changeRefFrom({ change: "a" }), { change: "a" });
    assert.equal(changeRefFrom(undefined), undefined);
    assert.equal(changeRefFrom({ change: "" }), undefined);
    assert.equal(changeRefFrom("a"), undefined);
  });

  it("checks statuses loosely", () => {
    assert.ok(isRunStatus(status()));
    assert.ok(!isRunStatus({ change: "a" }));
    assert.ok(!isRunStatus(null));
  });

  it("knows final states", () => {
    assert.ok(isFinalState("stopped"));
    assert.ok(!isFinalState("running"));
  });
});

describe("RestartPolicy", () => {
  it("allows a few restarts in the window, then gives up", () => {
    const p = new RestartPolicy(3, 1000);
    assert.deepEqual([p.allow(0), p.allow(10), p.allow(20), p.allow(30)], [true, true, true, false]);
    assert.equal(p.allow(1015), true); // the first ones left the window
    p.reset();
    assert.equal(p.allow(1016), true);
  });
});

describe("changeRefFromTasksPath (the editor-title buttons act on this file's change)", () => {
  it("reads the change and its root from a change's tasks.md", () => {
    assert.deepEqual(changeRefFromTasksPath("/home/u/my proj/openspec/changes/add-x/tasks.md"), {
      change: "add-x",
      root: "file:///home/u/my%20proj",
    });
  });

  it("refuses any other tasks.md", () => {
    for (const p of ["/p/tasks.md", "/p/docs/tasks.md", "/p/openspec/changes/archive/tasks.md", "/p/openspec/specs/x/tasks.md", "/p/openspec/changes/a/b/tasks.md"]) {
      assert.equal(changeRefFromTasksPath(p), undefined, p);
    }
  });
});
