"""The reviewer from the command line (SPEC §13): ``--review-agent``, ``--review-max-rounds``, a
queue of changes and a detached runner, each through real processes."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

from ralph_lsp.runner.client import spawn
from ralph_lsp.settings import settings_from_dict
from tests.cli.test_cli import ralph
from tests.conftest import EXAMPLE
from tests.engine.conftest import FAKES
from tests.queue.conftest import CHANGES, TOOLBOX

REVIEWER = f"{sys.executable} {FAKES / 'reviewer.py'}"


def records(root: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted((root / ".ralph").glob("runs/*/record.json"))]


def test_run_with_a_reviewer_works_its_task_then_succeeds_approved(tmp_path: Path) -> None:
    root = tmp_path / "hello"
    shutil.copytree(EXAMPLE, root)
    args = ["--agent", "demo", "--verify-when", "off", "--review-agent", f"{REVIEWER} once"]
    out = ralph("run", "add-greeting-cli", "--root", str(root), *args, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1] == "succeeded: every task is checked (9/9); review approved"
    assert "⚖ review 1 by python: rejected: 1 task(s) appended" in out.stdout
    [record] = records(root)
    assert [r["verdict"] for r in record["reviews"]] == ["rejected", "approved"]  # type: ignore[index]


def test_review_max_rounds_from_the_command_line(tmp_path: Path) -> None:
    root = tmp_path / "hello"
    shutil.copytree(EXAMPLE, root)
    args = ["--agent", "demo", "--verify-when", "off", "--review-agent", f"{REVIEWER} never"]
    out = ralph("run", "add-greeting-cli", "--root", str(root), *args, "--review-max-rounds", "1")
    assert out.returncode != 0
    assert "review still finds 1 unmet item after 1 round" in out.stdout
    bad = ralph("run", "add-greeting-cli", "--root", str(root), "--review-max-rounds", "0")
    assert bad.returncode == 2 and "--review-max-rounds: expected a whole number" in bad.stderr


def test_a_queue_reviews_each_change(tmp_path: Path) -> None:
    root = tmp_path / "toolbox"
    shutil.copytree(TOOLBOX, root, ignore=shutil.ignore_patterns(".ralph", "__pycache__"))
    two = CHANGES[:2]
    out = ralph(
        "run", *two, "--root", str(root), "--agent", "demo", "--review-agent", "same", timeout=240
    )
    assert out.returncode == 0, out.stdout + out.stderr
    ends = [line for line in out.stdout.splitlines() if line.startswith(("✓ ", "✗ "))]
    assert len(ends) == 2 and all(e.endswith("review approved") for e in ends), ends
    assert all(len(r["reviews"]) == 1 for r in records(root))  # type: ignore[arg-type]


async def test_a_detached_runner_reviews_as_the_engine_does(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    change = root / "openspec" / "changes" / "a"
    change.mkdir(parents=True)
    (change / "tasks.md").write_text("## 1. First\n- [ ] 1.1 one\n", encoding="utf-8")
    raw = {
        "agent": "demo",
        "verifyWhen": "off",
        "env": {"RALPH_DEMO_DELAY": "0"},
        "review": {"agent": [sys.executable, str(FAKES / "reviewer.py"), "once"]},
    }
    settings, warnings = settings_from_dict(raw)
    assert warnings == []
    spawned = await spawn(root, "a", settings)
    assert await asyncio.wait_for(spawned.process.wait(), 90) == 0
    [record] = records(root)
    assert record["state"] == "succeeded" and str(record["reason"]).endswith("review approved")
    assert [r["verdict"] for r in record["reviews"]] == ["rejected", "approved"]  # type: ignore[index]
