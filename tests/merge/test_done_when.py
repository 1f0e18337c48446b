"""The issue's "Done when", literally: `ralph-lsp run --all --parallel 2 --merge` on a git copy
of examples/toolbox merges every change into main after a verification on the merged result,
and leaves the user's own uncommitted file alone."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import ralph
from tests.git.conftest import NEEDS_GIT
from tests.queue.conftest import CHANGES, git

pytestmark = NEEDS_GIT


def test_run_all_parallel_2_merge_merges_every_change_into_main(toolbox_git: Path) -> None:
    root = toolbox_git
    (root / "mine.txt").write_text("the user's own, not committed\n")
    (root / "README.md").write_text((root / "README.md").read_text() + "\nmy edit\n")
    start = git(root, "rev-parse", "main").strip()
    out = ralph(
        "run", "--all", "--parallel", "2", "--merge", "--agent", "demo", cwd=root, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "merge train into main: 3 merged, 0 parked (needs-review), 0 refused" in out.stdout
    assert out.stdout.count("verify ✓ make test") >= 6  # each run's, then each merged result's
    subjects = git(root, "log", "--first-parent", "--format=%s", f"{start}..main").splitlines()
    assert sorted(s.split(" (run")[0] for s in subjects) == [f"ralph: merge {c}" for c in CHANGES]
    for module in ("slug", "title", "words"):
        assert (root / "toolbox" / f"{module}.py").is_file()  # the work tree followed main
    assert (root / "mine.txt").read_text() == "the user's own, not committed\n"
    assert (root / "README.md").read_text().endswith("\nmy edit\n")
    status = sorted(git(root, "status", "--porcelain").splitlines())
    assert status == [" M README.md", "?? mine.txt"]
    runs = json.loads(ralph("runs", "--json", "--root", str(root)).stdout)["runs"]
    assert {r["change"]: r.get("branchState") for r in runs} == dict.fromkeys(CHANGES, "merged")
