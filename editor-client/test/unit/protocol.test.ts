import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { changeRefFrom, isFinalState, isRunStatus } from "../../src/protocol";
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
