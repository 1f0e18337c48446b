"""`ralph-lsp run A B C` / `run --all`: a queue of changes, through the real command line, the
demo agent and the example's own verification (SPEC §9 "Queues")."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import ralph
from tests.engine.conftest import fake
from tests.queue.conftest import CHANGES, git

TIMEOUT = 240


def tasks(root: Path, change: str) -> str:
    return (root / "openspec" / "changes" / change / "tasks.md").read_text()


def queue_records(root: Path) -> list[dict[str, object]]:
    folder = root / ".ralph" / "queues"
    return [json.loads((p / "record.json").read_text()) for p in sorted(folder.iterdir())]


def summary_rows(stdout: str) -> dict[str, list[str]]:
    """change → its row of the summary table."""
    lines = stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("change "))
    return {line.split()[0]: line.split() for line in lines[head + 1 : -1] if line.strip()}


def test_three_demo_changes_in_sequence_all_succeed(toolbox: Path) -> None:
    out = ralph("run", *CHANGES, "--root", str(toolbox), "--agent", "demo", timeout=TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    ends = [line for line in lines if line.startswith(("✓ ", "✗ "))]
    assert [e.split(":")[0] for e in ends] == [f"✓ {c}" for c in CHANGES]
    assert all("verification passed (make test)" in e for e in ends), ends
    rows = summary_rows(out.stdout)
    assert sorted(rows) == sorted(CHANGES)
    assert all(row[1] == "succeeded" for row in rows.values())
    assert lines[-1] == "done: 3/3 succeeded"
    for change in CHANGES:
        assert "[ ]" not in tasks(toolbox, change)
    (record,) = queue_records(toolbox)
    assert [i["change"] for i in record["items"]] == list(CHANGES)
    assert all(i["state"] == "succeeded" and i["runId"] for i in record["items"])
    assert record["state"] == "done" and record["position"] == record["total"] == 3
    # one after another: each started after the one before it ended
    items = record["items"]
    assert (
        items[0]["endedAt"] <= items[1]["startedAt"] <= items[1]["endedAt"] <= items[2]["startedAt"]
    )


def test_a_stuck_change_does_not_stop_the_queue(toolbox: Path) -> None:
    # The project's tests fail while title.py exists without words.py: the second change's
    # verification cannot pass on its own, the third's makes it pass again.
    (toolbox / "tests" / "test_guard.py").write_text(
        "import os, unittest\n\n\nclass Guard(unittest.TestCase):\n"
        "    def test_title_needs_words(self) -> None:\n"
        "        here = os.path.dirname(os.path.dirname(__file__))\n"
        "        has = lambda m: os.path.exists(os.path.join(here, 'toolbox', m + '.py'))\n"
        "        self.assertFalse(has('title') and not has('words'))\n"
    )
    out = ralph(
        "run",
        *CHANGES,
        "--root",
        str(toolbox),
        "--agent",
        "demo",
        "--stuck-after",
        "2",
        timeout=TIMEOUT,
    )
    assert out.returncode == 3, out.stdout + out.stderr  # stuck's exit code
    states = {row[0]: row[1] for row in summary_rows(out.stdout).values()}
    assert states == {
        "add-slugify": "succeeded",
        "add-title-case": "stuck",
        "add-word-count": "succeeded",
    }
    assert "✗ add-title-case: stuck: verification fails (make test exited" in out.stdout
    assert out.stdout.splitlines()[-1] == "done: 2/3 succeeded"


def test_stop_on_failure_drops_the_rest_and_names_them(toolbox: Path) -> None:
    out = ralph(
        "run",
        *CHANGES,
        "--root",
        str(toolbox),
        "--agent-command",
        " ".join(fake("no_progress.py")),
        "--stuck-after",
        "1",
        "--stop-on-failure",
        timeout=TIMEOUT,
    )
    assert out.returncode == 3, out.stdout + out.stderr
    last = out.stdout.splitlines()[-1]
    assert last == (
        "done: 0/3 succeeded; add-slugify ended stuck (--stop-on-failure);"
        " dropped add-title-case, add-word-count"
    )
    (record,) = queue_records(toolbox)
    assert [i["state"] for i in record["items"]] == ["stuck", "dropped", "dropped"]
    assert "[ ]" in tasks(toolbox, "add-word-count")


def test_the_budget_stops_the_queue_before_a_change(toolbox: Path) -> None:
    out = ralph(
        "run",
        *CHANGES,
        "--root",
        str(toolbox),
        "--agent-command",
        " ".join(fake("costly.py")),
        "--verify-when",
        "off",
        "--max-cost",
        "0.8",
        env={"FAKE_COST": "0.5"},
        timeout=TIMEOUT,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    (record,) = queue_records(toolbox)
    states = [(i["state"], i["costUsd"]) for i in record["items"]]
    assert states == [("succeeded", 0.5), ("succeeded", 0.5), ("skipped", None)]
    reason = record["items"][2]["reason"]
    assert reason == "not started: the queue's budget of $0.8 is spent ($1.0000)"
    assert f"– add-word-count: skipped: {reason}" in out.stdout
    assert "[ ]" in tasks(toolbox, "add-word-count")  # it never started
    assert record["costUsd"] == 1.0


def test_parallel_outside_git_is_refused_before_anything_starts(toolbox: Path) -> None:
    out = ralph("run", "--all", "--parallel", "2", "--root", str(toolbox), "--agent", "demo")
    assert out.returncode == 2
    assert "worktree" in out.stderr and "not in one" in out.stderr, out.stderr
    assert "parallel 1" in out.stderr
    assert not (toolbox / ".ralph").exists()


def test_run_all_parallel_2_done_when(toolbox_git: Path) -> None:
    """The issue's "Done when", literally: `ralph-lsp run --all --parallel 2` on a git copy of
    the example workspace ends with three verified successes, each on its own ralph/<change>
    branch, and the user's tree untouched."""
    root = toolbox_git
    head = git(root, "rev-parse", "HEAD").strip()
    out = ralph("run", "--all", "--parallel", "2", "--agent", "demo", cwd=root, timeout=TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = summary_rows(out.stdout)
    assert sorted(rows) == sorted(CHANGES)
    for change in CHANGES:
        row = rows[change]
        assert row[1] == "succeeded" and row[-1] == f"ralph/{change}", row
    assert out.stdout.count("verification passed (make test)") == 3
    assert out.stdout.splitlines()[-1] == "done: 3/3 succeeded"
    # The user's tree: same HEAD and branch, nothing changed, tasks unchecked.
    assert git(root, "rev-parse", "HEAD").strip() == head
    assert git(root, "symbolic-ref", "--short", "HEAD").strip() == "main"
    assert git(root, "status", "--porcelain") == ""
    modules = {"add-slugify": "slug", "add-title-case": "title", "add-word-count": "words"}
    for change, module in modules.items():
        assert "[ ]" in tasks(root, change)
        assert not (root / "toolbox" / f"{module}.py").exists()
        files = git(root, "ls-tree", "-r", "--name-only", f"ralph/{change}").split()
        assert f"toolbox/{module}.py" in files and f"tests/test_{module}.py" in files
        others = set(modules.values()) - {module}
        assert not any(f"toolbox/{o}.py" in files for o in others), files  # never mixed
        on_branch = git(root, "show", f"ralph/{change}:openspec/changes/{change}/tasks.md")
        assert "[ ]" not in on_branch
    # Two at once: some change started before another ended.
    (record,) = queue_records(root)
    items = record["items"]
    assert record["parallel"] == 2
    assert items[1]["startedAt"] < items[0]["endedAt"]


def test_history_shows_queues(toolbox: Path) -> None:
    empty = ralph("history", "--root", str(toolbox))
    assert empty.returncode == 0 and "no queues yet" in empty.stdout
    out = ralph("run", *CHANGES[:2], "--root", str(toolbox), "--agent", "demo", timeout=TIMEOUT)
    assert out.returncode == 0, out.stdout + out.stderr
    listing = ralph("history", "--root", str(toolbox)).stdout.splitlines()
    assert listing[0].startswith("q-") and "done" in listing[0] and "2/2 succeeded" in listing[0]
    assert listing[1].startswith(f"    {CHANGES[0]}: succeeded  r-")
    data = json.loads(ralph("history", "--json", "--root", str(toolbox)).stdout)
    (queue,) = data["queues"]
    run_ids = [i["runId"] for i in queue["items"]]
    runs = json.loads(ralph("history", CHANGES[1], "--json", "--root", str(toolbox)).stdout)
    assert [r["runId"] for r in runs["runs"]] == run_ids[1:]


def test_a_queues_summary_says_what_its_money_bought(toolbox: Path) -> None:
    # SPEC §15: the queue's record and its last line add its runs' costs up
    out = ralph(
        "run", "add-slugify", "add-title-case", "--root", str(toolbox),
        "--agent-command", " ".join([*fake("modeled.py"), "--model", "{model}", "-p", "{prompt}"]),
        "--model", "m", "--verify-when", "off",
        env={"FAKE_PRICES": "m=0.1"}, timeout=TIMEOUT,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    (record,) = queue_records(toolbox)
    costs = record["costs"]
    assert abs(costs["totalUsd"] - 0.6) < 1e-9 and costs["tasksChecked"] == 6
    assert costs["noProgressIterations"] == 0
    assert all(abs(i["costs"]["totalUsd"] - 0.3) < 1e-9 for i in record["items"])
    assert out.stdout.splitlines()[-1] == (
        "done: 2/2 succeeded · $0.6000 · $0.0000 on 0 iterations without progress"
    )
