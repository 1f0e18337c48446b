"""The merge train's verification runs in the sandbox, as a run's does (issue 46): the checks it
runs are the code the run's agent wrote, merged. A check on a run's branch that writes outside
the project writes nothing there, the merge goes on, and the sandbox is said."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ralph_lsp.cli import main
from tests.git.conftest import NEEDS_GIT
from tests.merge.conftest import VERIFY, commit_on, fake_run, record

pytestmark = NEEDS_GIT

# A check of the agent's: it tries to leave a file outside the project (a login script, say)
# and to read a secret beside it, and passes whatever happens.
HOSTILE = """
import os, sys
target, secret = sys.argv[1], sys.argv[2]
try:
    with open(target, "w") as f:
        f.write("written by the merged code's check\\n")
except OSError as exc:
    print("could not write outside:", exc)
try:
    print("secret:", open(secret).read().strip())
except OSError as exc:
    print("could not read the secret:", exc)
"""


@pytest.mark.skipif(os.environ.get("RALPH_SANDBOX") == "off", reason="about the sandbox")
def test_the_merged_results_checks_run_in_the_sandbox(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("THE-PRIVATE-KEY\n")
    target = home / ".bashrc"
    call = (
        f"import runpy, sys; sys.argv = ['h', {str(target)!r}, {str(home / '.ssh/id_ed25519')!r}]"
    )
    commit_on(
        repo,
        "ralph/a",
        {"hostile.py": HOSTILE, "check_hostile.py": f"{call}; runpy.run_path('hostile.py')\n"},
    )
    fake_run(repo, "a", "r-20260101-000001-0000a", started="2026-01-01T00:00:01Z")
    os.environ["HOME"], old_home = str(home), os.environ.get("HOME", "")
    try:
        code = main(["merge", "--all", "--root", str(repo), "--verify", VERIFY[0]])
    finally:
        os.environ["HOME"] = old_home
    out = capsys.readouterr().out
    assert not target.exists(), "the merged code's check wrote outside the project"
    assert "THE-PRIVATE-KEY" not in out, "the merged code's check read a secret"
    assert "sandbox: bwrap" in out, out
    assert code == 0, out
    assert "1 merged, 0 parked" in out
    assert record(repo, "r-20260101-000001-0000a")["branchState"] == "merged"


# A check of the agent's that leaves dirt in the scratch worktree (an untracked file, an
# ignored one, a tracked file changed) and fails when it finds any there before it starts.
DIRT = """
import os
assert not os.path.exists("leftover.txt"), "an earlier verification's file is still here"
assert not os.path.exists("__pycache__/stale.pyc"), "an earlier verification's ignored file"
assert open("notes.txt").read() == "notes\\n", "an earlier verification changed notes.txt"
open("leftover.txt", "w").write("x\\n")
os.makedirs("__pycache__", exist_ok=True)
open("__pycache__/stale.pyc", "w").write("x\\n")
open("notes.txt", "w").write("changed by a check\\n")
"""


def test_a_train_s_verifications_each_start_from_a_clean_scratch_without_a_proxy(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between two verifications the scratch is cleaned while the next merge is made, and a
    merge's sandbox starts no egress proxy (its checks have no network): a proxy that could
    not start would not stop the train."""
    from ralph_lsp.sandbox import proxy

    async def refused(*_args: object) -> None:
        raise OSError("no egress proxy may be started for a merge's checks")

    monkeypatch.setattr(proxy.EgressProxy, "start", refused)
    commit_on(repo, "ralph/a", {"check_dirt.py": DIRT, "a.txt": "a\n"})
    commit_on(repo, "ralph/b", {"b.txt": "b\n"})
    commit_on(repo, "ralph/c", {"c.txt": "c\n"})
    for i, change in enumerate("abc"):
        fake_run(
            repo, change, f"r-20260101-00000{i}-0000{change}", started=f"2026-01-01T00:00:0{i}Z"
        )
    code = main(["merge", "--all", "--root", str(repo), "--verify", VERIFY[0]])
    out = capsys.readouterr().out
    assert "3 merged, 0 parked" in out, out
    assert code == 0, out
