"""A git without ``merge-tree --write-tree`` (older than 2.38) is refused, clearly, before
anything is done."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from ralph_lsp.cli import main
from tests.git.conftest import NEEDS_GIT
from tests.merge.conftest import CALC, VERIFY, commit_on, fake_run, rev

pytestmark = NEEDS_GIT


def test_an_older_git_is_refused_with_the_reason(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    commit_on(repo, "ralph/a", {"calc.py": CALC + "\nX = 1\n"})
    fake_run(repo, "a", "r-20260101-000001-00001")
    real = shutil.which("git")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    old = bin_dir / "git"  # git 2.37: answers its version, does the rest as the real one
    old.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = version ] && { echo "git version 2.37.1"; exit 0; }; done\n'
        f'exec {real} "$@"\n'
    )
    old.chmod(old.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    before = rev(repo, "main")
    with pytest.raises(SystemExit) as exc:
        main(["merge", "a", "--root", str(repo), "--verify", VERIFY[0]])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "merging needs git 2.38 or newer" in err and "this git is 2.37.1" in err
    assert rev(repo, "main") == before
