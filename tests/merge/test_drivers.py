"""The merge train never runs a merge driver the repository defines (issue 46): a file whose
``.gitattributes`` names ``merge=evil``, changed on both sides, is merged by git's own text
merge, for every strategy, while ``merge.evil.driver`` names a canary that never runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ralph_lsp.cli import main
from tests.git.conftest import NEEDS_GIT, git
from tests.merge.conftest import VERIFY, commit_on, fake_run, record, rev

pytestmark = NEEDS_GIT

LINES = "".join(f"line {i}\n" for i in range(1, 11))


def arm(repo: Path, canary: Path) -> None:
    """``notes.txt`` merged by the repository's own driver, which leaves ``canary``."""
    (repo / ".gitattributes").write_text("*.txt merge=evil\n")
    (repo / "notes.txt").write_text(LINES)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a merge driver for text")
    git(repo, "config", "merge.evil.driver", f"touch {canary}; false")
    git(repo, "config", "merge.evil.name", "the repository's own merge program")


@pytest.mark.parametrize("strategy", ["merge", "squash", "rebase"])
def test_a_repository_defined_merge_driver_never_runs_in_the_train(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], strategy: str
) -> None:
    canary = tmp_path / "merge-driver-ran"
    arm(repo, canary)
    commit_on(repo, "ralph/a", {"notes.txt": LINES.replace("line 2\n", "line 2 (a)\n")})
    commit_on(repo, "ralph/b", {"notes.txt": LINES.replace("line 9\n", "line 9 (b)\n")})
    fake_run(repo, "a", "r-20260101-000001-0000a", started="2026-01-01T00:00:01Z")
    fake_run(repo, "b", "r-20260101-000002-0000b", started="2026-01-01T00:00:02Z")
    start = rev(repo, "main")
    argv = ["merge", "--all", "--root", str(repo), "--verify", VERIFY[0]]
    code = main([*argv, "--strategy", strategy])
    out = capsys.readouterr().out
    assert not canary.exists(), "the repository's merge driver ran"
    assert code == 0, out
    assert "2 merged, 0 parked" in out
    # b's change was merged into a's by the three-way text merge: both are in
    assert (repo / "notes.txt").read_text() == LINES.replace("line 2\n", "line 2 (a)\n").replace(
        "line 9\n", "line 9 (b)\n"
    )
    assert rev(repo, "main") != start
    for run in ("r-20260101-000001-0000a", "r-20260101-000002-0000b"):
        assert record(repo, run)["branchState"] == "merged"


@pytest.mark.unsandboxed("only an unconfined check can write git's configuration mid-train")
def test_a_driver_a_check_configures_mid_train_is_off_for_the_next_merge(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The train looks its drivers up once a step (issue 46's bench), and anew after each
    verification: a check that configures ``merge.evil.driver`` cannot have it run on the host
    for the next run's merge."""
    canary = tmp_path / "merge-driver-ran"
    (repo / ".gitattributes").write_text("*.txt merge=evil\n")
    (repo / "notes.txt").write_text(LINES)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "text merged by a driver nobody configured yet")
    arming = tmp_path / "arm.py"
    arming.write_text(
        "import subprocess\n"
        f"subprocess.run(['git', 'config', 'merge.evil.driver', 'touch {canary}; false'],"
        " check=True)\n"
    )
    commit_on(repo, "ralph/a", {"notes.txt": LINES.replace("line 2\n", "line 2 (a)\n")})
    commit_on(repo, "ralph/b", {"notes.txt": LINES.replace("line 9\n", "line 9 (b)\n")})
    fake_run(repo, "a", "r-20260101-000001-0000a", started="2026-01-01T00:00:01Z")
    fake_run(repo, "b", "r-20260101-000002-0000b", started="2026-01-01T00:00:02Z")
    code = main(["merge", "--all", "--root", str(repo), "--verify", f"{sys.executable} {arming}"])
    out = capsys.readouterr().out
    assert "merge.evil.driver" in git(repo, "config", "--list"), "the check did not arm"
    assert not canary.exists(), "a driver configured by the first run's check ran"
    assert code == 0, out
    assert "2 merged, 0 parked" in out
