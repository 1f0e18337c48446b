""" "Resolve with agent": a textual conflict handed to an agent (a real program) on the run's
branch; once its run ends verified, the branch merges cleanly."""

from __future__ import annotations

from pathlib import Path

from ralph_lsp.cli import main
from tests.engine.conftest import fake
from tests.git.conftest import NEEDS_GIT, git
from tests.merge.conftest import CALC, VERIFY, commit_on, fake_run, record, rev

pytestmark = NEEDS_GIT


def test_the_agent_resolves_a_prepared_conflict_and_the_branch_then_merges(
    repo: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    # both sides add a function at the end of calc.py: a textual conflict, whose resolution
    # "keep both" makes both checks pass
    commit_on(
        repo,
        "ralph/a",
        {
            "calc.py": CALC + "\n\ndef sub(a, b):\n    return a - b\n",
            "check_sub.py": "import calc\nassert calc.sub(3, 1) == 2\n",
        },
    )
    (repo / "calc.py").write_text(CALC + "\n\ndef neg(a):\n    return -a\n")
    (repo / "check_neg.py").write_text("import calc\nassert calc.neg(1) == -1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "main adds neg")
    fake_run(repo, "a", "r-20260101-000001-00001")
    before = rev(repo, "main")
    assert main(["merge", "a", "--root", str(repo), "--verify", VERIFY[0]]) == 1
    assert "conflicting files: calc.py" in capsys.readouterr().out
    agent = " ".join(fake("resolve_conflicts.py"))
    code = main(
        [
            "merge",
            "a",
            "--resolve",
            "--root",
            str(repo),
            "--verify",
            VERIFY[0],
            "--agent-command",
            agent,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "conflict markers in calc.py" in out and "resolved calc.py" in out
    assert rev(repo, "main") == before  # resolving never moves the target
    assert "<<<<<<<" not in git(repo, "show", "ralph/a:calc.py")
    assert main(["merge", "a", "--root", str(repo), "--verify", VERIFY[0]]) == 0
    text = (repo / "calc.py").read_text()
    assert "def sub" in text and "def neg" in text
    runs = [r for r in (repo / ".ralph" / "runs").iterdir() if r.name != "r-20260101-000001-00001"]
    assert len(runs) == 1 and record(repo, runs[0].name)["branchState"] == "merged"
