"""``ralph-lsp run --model/--escalation`` and ``ralph-lsp history CHANGE --receipts [--json]``
(SPEC §15), through the real command line and a real fake agent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.cli.test_cli import project, ralph  # noqa: F401  (the fixture)
from tests.engine.conftest import CHANGE, FAKES

TWO_STORIES = "# Tasks\n\n## 1. One\n- [ ] 1.1 first\n\n## 2. Two\n- [ ] 2.1 second\n"


def test_escalation_flags_then_the_receipts_as_lines_and_as_json(project: Path) -> None:  # noqa: F811
    (project / "openspec/changes" / CHANGE / "tasks.md").write_text(TWO_STORIES)
    command = f"{sys.executable} {FAKES / 'modeled.py'} --model {{model}} -p {{prompt}}"
    env = {"FAKE_ABLE_MODELS": "large", "FAKE_PRICES": "small=0.01,large=0.1"}
    run = ralph(
        "run", CHANGE, "--root", str(project), "--agent-command", command,
        "--escalation", "small,large", "--escalate-after", "1", "--verify-when", "off",
        env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    # the end line: the total, cost per task and the spend without progress
    assert "$0.2200 · $0.1100 per task, unverified · $0.0200 on 2 iterations without progress" in (
        run.stdout + run.stderr
    )
    lines = ralph("history", CHANGE, "--root", str(project), "--receipts").stdout.splitlines()
    assert lines[0].split()[1] == "succeeded"
    receipts = [ln.strip() for ln in lines[1:]]
    assert receipts[0].startswith("#1 small (escalation 1/2: story 1 starts at the first model)")
    assert receipts[1].startswith(
        "#2 large (escalation 2/2: story 1 made no progress in 1 iteration with small)"
    )
    assert (
        "in 100 · cached 0 · cache write 0 · out 10 · $0.1000 reported · tasks 1.1" in receipts[1]
    )
    assert receipts[1].endswith("no verification ran · exited 0")
    assert receipts[0].split(" · ")[-3:] == ["no task checked", "no verification ran", "exited 0"]
    assert receipts[-1].startswith("total $0.2200 · ")
    data = json.loads(
        ralph("history", CHANGE, "--root", str(project), "--receipts", "--json").stdout
    )
    (run_json,) = data["runs"]
    assert [r["model"] for r in run_json["receipts"]] == ["small", "large", "small", "large"]
    assert run_json["receipts"][1]["usage"] == {
        "inputTokens": 100, "cachedInputTokens": 0, "cacheWriteTokens": 0, "outputTokens": 10,
    }  # fmt: skip
    assert run_json["costs"]["totalUsd"] == 0.22 or abs(run_json["costs"]["totalUsd"] - 0.22) < 1e-9
    assert run_json["costs"]["noProgressIterations"] == 2
    # ralph-lsp runs: the same summary, from the run's record
    table = ralph("runs", "--root", str(project)).stdout.splitlines()
    assert table[0].split()[-1] == "SPENT"
    assert table[1].endswith("$0.2200 · $0.0200 on 2 iterations without progress")
    (row,) = json.loads(ralph("runs", "--root", str(project), "--json").stdout)["runs"]
    assert row["costs"]["totalUsd"] == run_json["costs"]["totalUsd"]


def test_bad_model_flags_are_usage_errors_that_start_nothing(project: Path) -> None:  # noqa: F811
    before = (project / "openspec/changes" / CHANGE / "tasks.md").read_text()
    for flags in (["--escalation", "a,a"], ["--model=-x"], ["--escalate-after", "0"]):
        res = ralph("run", CHANGE, "--root", str(project), "--agent", "demo", *flags)
        assert res.returncode == 2, (flags, res.stderr)
        assert (
            res.stderr.strip()
            .splitlines()[-1]
            .startswith(f"ralph-lsp: error: {flags[0].split('=')[0]}: expected")
        )
    assert (project / "openspec/changes" / CHANGE / "tasks.md").read_text() == before
    assert not (project / ".ralph" / "runs").exists() or not any(
        (project / ".ralph/runs").iterdir()
    )
