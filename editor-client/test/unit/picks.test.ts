import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { activeChangeIndex, changeDescription, changePick, runPickItems } from "../../src/picks";
import { change, status } from "./fixtures";

const toPath = (uri: string): string | undefined => (uri.startsWith("file://") ? decodeURIComponent(uri.slice(7)) : undefined);

describe("changePick", () => {
  const changes = [
    change("add-a", { completed: 3, total: 10 }),
    change("add-b", { completed: 0, total: 0 }),
    change("add-c", { run: status({ change: "add-c", iteration: 4 }) }),
  ];

  it("lists the changes in order with their progress", () => {
    const pick = changePick(changes, toPath, undefined);
    assert.deepEqual(
      pick.items.map((i) => [i.label, i.description, i.detail]),
      [
        ["add-a", "3/10", undefined],
        ["add-b", "no tasks", undefined],
        ["add-c", "0/4 · running, iteration 4", undefined],
      ],
    );
    assert.equal(pick.active, -1);
  });

  it("preselects the change whose tasks.md is in the active editor", () => {
    assert.equal(changePick(changes, toPath, "/ws/openspec/changes/add-b/tasks.md").active, 1);
  });

  it("preselects the change of any file in its folder", () => {
    assert.equal(changePick(changes, toPath, "/ws/openspec/changes/add-c/specs/x/spec.md").active, 2);
    assert.equal(changePick(changes, toPath, "/ws/openspec/changes/add-cc/tasks.md").active, -1);
    assert.equal(changePick(changes, toPath, "/ws/README.md").active, -1);
  });

  it("matches encoded URIs by path", () => {
    const spaced = [change("x", { tasksUri: "file:///my%20ws/openspec/changes/x/tasks.md" })];
    assert.equal(changePick(spaced, toPath, "/my ws/openspec/changes/x/tasks.md").active, 0);
  });

  it("names the root when several are open", () => {
    const two = [change("a"), change("a", { root: "file:///other", tasksUri: "file:///other/openspec/changes/a/tasks.md" })];
    const pick = changePick(two, toPath, "/other/openspec/changes/a/tasks.md");
    assert.deepEqual(pick.items.map((i) => i.detail), ["/ws", "/other"]);
    assert.equal(pick.active, 1);
  });
});

describe("activeChangeIndex", () => {
  it("prefers an exact tasks.md match and copes with Windows separators", () => {
    const list = [{ tasksPath: "C:\\ws\\openspec\\changes\\a\\tasks.md" }, { tasksPath: undefined }];
    assert.equal(activeChangeIndex(list, "C:/ws/openspec/changes/a/tasks.md"), 0);
    assert.equal(activeChangeIndex(list, undefined), -1);
  });
});

describe("descriptions", () => {
  it("says how the last run ended", () => {
    assert.equal(changeDescription(change("a", { completed: 4, run: status({ state: "stuck" }) })), "4/4 · last run stuck");
  });

  it("describes running runs for stop and guidance", () => {
    assert.deepEqual(
      runPickItems([status()]).map((i) => [i.label, i.description]),
      [["add-x", "iteration 2 · 3/10"]],
    );
  });
});
