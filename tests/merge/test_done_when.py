"""The issue's "Done when", literally: `ralph-lsp run --all --parallel 2 --merge` on a git copy
of examples/toolbox merges every change into main after a verification on the merged result,
and leaves the user's own uncommitted file alone (#1); when one change's work semantically
conflicts with another's, that one is parked `needs-review`, the others merge and main's own
verification stays green (#2)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.test_cli import ralph
from tests.engine.conftest import fake
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


def test_run_all_parallel_2_merge_parks_a_semantic_conflict_and_keeps_main_green(
    toolbox_git: Path,
) -> None:
    # main gains toolbox.text.shout; one change renames it, another calls it by its old name:
    # each branch passes alone, the two merge cleanly as text, and the merged result fails
    root = toolbox_git
    (root / "toolbox" / "text.py").write_text("def shout(s):\n    return s.upper()\n")
    (root / "tests" / "test_text.py").write_text(
        "import unittest\n\nfrom toolbox.text import shout\n\n\n"
        "class Text(unittest.TestCase):\n"
        "    def test_shout(self) -> None:\n"
        "        self.assertEqual(shout('a'), 'A')\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "main: toolbox.text.shout")
    agent = " ".join(fake("semantic_rename.py"))
    out = ralph(
        "run",
        "--all",
        "--parallel",
        "2",
        "--merge",
        "--agent-command",
        agent,
        cwd=root,
        timeout=300,
    )
    text = out.stdout + out.stderr
    assert "merge train into main: 2 merged, 1 parked (needs-review), 0 refused" in text, text
    runs = json.loads(ralph("runs", "--json", "--root", str(root)).stdout)["runs"]
    states = {r["change"]: r.get("branchState") for r in runs}
    assert {r["change"]: r["state"] for r in runs} == dict.fromkeys(CHANGES, "succeeded")
    assert states["add-slugify"] == "merged"
    # whichever of the two came second in the train is the one parked
    pair = sorted([states["add-word-count"], states["add-title-case"]])
    assert pair == ["merged", "needs-review"], states
    parked = next(c for c, s in states.items() if s == "needs-review")
    assert f"⎇ {parked}: needs-review: the merged result fails verification" in text
    # the CLI exited only once its scratch integration worktree was deleted and forgotten
    assert list((root / ".git" / "ralph" / "integration").iterdir()) == []
    assert "integration" not in git(root, "worktree", "list", "--porcelain")
    listing = ralph("runs", "--root", str(root)).stdout
    assert "needs-review" in listing
    # main's own verification, after the train, in a fresh checkout of main
    check = root.parent / "main-check"
    git(root, "worktree", "add", "-q", "--detach", str(check), "main")
    verified = subprocess.run(
        ["make", "test"], cwd=check, capture_output=True, text=True, timeout=120
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "Ran " in verified.stderr and "OK" in verified.stderr
