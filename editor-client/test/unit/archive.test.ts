import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { diffTitle, outcomeMessage, previewPaths } from "../../src/archive";

const spec = { specId: "auth/login", uri: "file:///p/openspec/specs/auth/login/spec.md", oldText: null, newText: "x" };

describe("archive preview helpers", () => {
  it("gives each side of each preview its own path", () => {
    assert.deepEqual(previewPaths(3, spec), {
      before: "/before/3/auth/login/spec.md",
      after: "/after/3/auth/login/spec.md",
    });
  });

  it("titles a new spec and a changed one differently", () => {
    assert.equal(diffTitle("c", spec), "auth/login/spec.md (new spec, archive of c)");
    assert.equal(diffTitle("c", { ...spec, oldText: "old" }), "auth/login/spec.md (current ↔ archived, archive of c)");
  });

  it("reports an archive done and one refused", () => {
    const done = outcomeMessage("c", {
      archive: {
        change: "c",
        archivedAs: "2026-01-02-c",
        path: "/p",
        specsUpdated: true,
        totals: { added: 2, modified: 1, removed: 0, renamed: 0 },
      },
    });
    assert.equal(done, "Ralph: archived c as 2026-01-02-c; specs updated (+2 ~1 -0 →0).");
    const refused = outcomeMessage("c", {
      archive: null,
      status: [{ severity: "error", code: "archive_tasks_incomplete", message: "1 incomplete task(s) found for change 'c'.", fix: "Complete the tasks or rerun with --yes." }],
    });
    assert.equal(refused, "Ralph: c was not archived: 1 incomplete task(s) found for change 'c'. Complete the tasks or rerun with --yes.");
    assert.equal(outcomeMessage("c", { archive: null }), "Ralph: c was not archived.");
  });
});
