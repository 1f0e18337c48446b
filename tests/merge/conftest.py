"""Real git repositories with a small Python project, and runs that ended on branches.

A "run" here is what a worktree run leaves behind: a branch ``ralph/<change>`` with the agent's
commits, and the run's record under ``.ralph/runs/<runId>/`` naming that branch (the record's
own format, as ``loop/reporting.py`` writes it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.git.conftest import git, init_repo
from tests.queue.conftest import toolbox, toolbox_git  # noqa: F401 (fixtures used here)

#: The project's verification: its checks import the code and call it.
VERIFY = [f"{sys.executable} check.py"]

CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
CHECK = (
    "import calc, glob, runpy\n\nassert calc.add(2, 3) == 5\nassert calc.mul(2, 3) == 6\n"
    "for extra in sorted(glob.glob('check_*.py')):\n    runpy.run_path(extra)\nprint('ok')\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository on ``main`` with calc.py, its check and three OpenSpec changes."""
    root = init_repo(tmp_path / "proj")
    (root / "calc.py").write_text(CALC)
    (root / "check.py").write_text(CHECK)
    (root / "notes.txt").write_text("notes\n")
    (root / ".gitignore").write_text("__pycache__/\n")
    for change in ("a", "b", "c"):
        d = root / "openspec" / "changes" / change
        d.mkdir(parents=True)
        (d / "tasks.md").write_text(f"## 1. {change}\n- [x] 1.1 do {change}\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    return root


def commit_on(root: Path, branch: str, files: dict[str, str], start: str = "main") -> str:
    """A commit on ``branch`` (made from ``start`` when new) writing ``files``, made in a
    worktree of its own so the main work tree is not touched."""
    wt = root.parent / f"wt-{branch.replace('/', '-')}"
    exists = git(root, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False)
    if exists:
        git(root, "worktree", "add", "-q", str(wt), branch)
    else:
        git(root, "worktree", "add", "-q", "-b", branch, str(wt), start)
    for name, text in files.items():
        (wt / name).write_text(text)
    git(wt, "add", "-A")
    git(wt, "commit", "-qm", f"{branch}: {', '.join(files)}")
    sha = git(wt, "rev-parse", "HEAD").strip()
    git(root, "worktree", "remove", str(wt))
    return sha


def fake_run_on(root: Path, change: str, run_id: str, branch: str) -> Path:
    """The record of a succeeded remote run (no worktree) whose branch is ``branch``."""
    path = fake_run(root, change, run_id, branch=branch)
    data = json.loads(path.read_text())
    data["worktree"] = None
    path.write_text(json.dumps(data))
    return path


def fake_run(
    root: Path,
    change: str,
    run_id: str,
    *,
    started: str = "2026-01-01T00:00:00Z",
    cost: float | None = None,
    branch: str | None = None,
) -> Path:
    """The record of a succeeded worktree run of ``change`` on branch ``ralph/<change>``."""
    tip = git(root, "rev-parse", f"refs/heads/{branch or f'ralph/{change}'}").strip()
    record = {
        "runId": run_id,
        "change": change,
        "root": str(root),
        "startedAt": started,
        "endedAt": started,
        "state": "succeeded",
        "reason": "every task checked",
        "owner": {"pid": 1, "startedAt": None},
        "transitions": [],
        "iterations": [
            {
                "n": 1,
                "tasksChecked": 1,
                "checkpoint": tip,
                "filesChanged": ["calc.py"],
                "costUsd": cost,
                "verification": [
                    {"command": "check", "exitCode": 0, "durationMs": 1, "outputTail": "ok"}
                ],
            }
        ],
        "rateLimited": [],
        "worktree": {"branch": f"ralph/{change}"},
        "guidance": [],
        "blocked": [],
        "progress": {"completed": 1, "total": 1},
    }
    folder = root / ".ralph" / "runs" / run_id
    folder.mkdir(parents=True)
    (root / ".ralph" / ".gitignore").write_text("*\n")
    (folder / "record.json").write_text(json.dumps(record))
    return folder / "record.json"


def record(root: Path, run_id: str) -> dict[str, object]:
    data = json.loads((root / ".ralph" / "runs" / run_id / "record.json").read_text())
    assert isinstance(data, dict)
    return data


def rev(root: Path, name: str) -> str:
    return git(root, "rev-parse", name).strip()
