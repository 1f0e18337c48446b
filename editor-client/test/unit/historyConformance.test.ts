import assert from "node:assert/strict";
import { test } from "node:test";
import { formatHistory } from "../../src/history";
import type { HistoryRecord } from "../../src/protocol";
import { RunEndNotifier } from "../../src/notify";
import { cleanConformance, conformanceSection, historyHtml } from "../../src/views/historyHtml";
import { status } from "./fixtures";

// The record's `conformance` as the loop writes it (ConformanceGate.record_json: the table's
// to_json with require, at and casesFile).
const conformance = {
  require: "verified",
  at: "2026-12-02T02:40:00Z",
  casesFile: "conformance-cases.json",
  summary: "1/3 scenarios verified",
  verified: 1,
  total: 3,
  rows: [
    { key: "cli/Shouting/Shout once", capability: "cli", requirement: "Shouting", title: "Shout once", state: "verified", test: "tests/test_shout.py::test_shout", spec: "openspec/changes/add-shout/specs/cli/spec.md", line: 6 },
    { key: "cli/Shouting/Shout twice", capability: "cli", requirement: "Shouting", title: "Shout twice", state: "failing", test: "tests/test_shout.py::test_shout_twice", spec: "openspec/changes/add-shout/specs/cli/spec.md", line: 10 },
    { key: "cli/Empty input/<b>Empty</b>", capability: "cli", requirement: "Empty input", title: "<b>Empty</b>", state: "unlinked", test: null, spec: "openspec/changes/add-shout/specs/cli/spec.md", line: 17 },
  ],
  warnings: ["tests/x.py:3: ambiguous"],
};

const record = {
  runId: "r-1",
  change: "add-shout",
  root: "file:///ws",
  startedAt: "2026-12-02T02:39:00Z",
  endedAt: "2026-12-02T02:40:01Z",
  state: "exhausted",
  reason: "1/3 scenarios verified",
  transitions: [],
  iterations: [],
  guidance: [],
  conformance,
} as unknown as HistoryRecord;

test("the history page shows the run's last conformance table: scenario, state and test", () => {
  const html = conformanceSection(record);
  assert.match(html, /Conformance: 1\/3 scenarios verified/);
  assert.match(html, /cli\/Shouting\/Shout once<\/td><td><span class="ok">✓ verified<\/span><\/td><td><code>tests\/test_shout.py::test_shout<\/code>/);
  assert.match(html, /✗ failing<\/span><\/td><td><code>tests\/test_shout.py::test_shout_twice<\/code>/);
  assert.match(html, /○ no test names it<\/span><\/td><td>—<\/td>/);
  assert.ok(!html.includes("<b>Empty</b>") && html.includes("&lt;b&gt;Empty&lt;/b&gt;"), "repository text is escaped");
  assert.match(html, /<li>tests\/x.py:3: ambiguous<\/li>/);
  const page = historyHtml({ change: "add-shout", runs: [record], total: 4, nonce: "n", cspSource: "c" });
  assert.ok(page.includes(html), "the run's section holds the table");
});

test("a record without a table (or with a planted one) shows none, and bad rows are left out", () => {
  assert.equal(conformanceSection({ ...record, conformance: null }), "");
  assert.equal(conformanceSection({ ...record, conformance: "x" as never }), "");
  assert.equal(cleanConformance({ rows: "no" }), null);
  const odd = cleanConformance({ rows: [{ key: "a", state: "odd" }, 7, { key: "b", state: "verified", test: 3 }] });
  assert.deepEqual(odd?.rows.map((r) => [r.key, r.state, r.test]), [["b", "verified", null]]);
  assert.equal(odd?.summary, "1/1 scenario verified");
});

test("the Markdown history lists the same table", () => {
  const md = formatHistory("add-shout", [record]);
  assert.ok(md.includes("Conformance: 1/3 scenarios verified"), md);
  assert.ok(md.includes("| cli/Shouting/Shout once | verified | tests/test\\_shout.py::test\\_shout |"), md);
  assert.ok(md.includes("| cli/Empty input/\\<b\\>Empty\\</b\\> | unlinked | — |"), md);
});

test("the run-end notification says how many scenarios were verified: it is in the run's reason", () => {
  const n = new RunEndNotifier();
  n.observe(status({ runId: "c1" }));
  // the reason a run with the conformance gate ends with (tests/conformance/test_gate_run.py)
  const reason = "every task is checked (4/4); verification passed (make test); 3/4 scenarios verified";
  const note = n.observe(status({ runId: "c1", state: "stuck", completed: 4, total: 4, reason }));
  assert.match(note?.message ?? "", /3\/4 scenarios verified$/);
});
