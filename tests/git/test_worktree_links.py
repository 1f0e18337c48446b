"""A worktree run copies the change's folder into the new worktree, checked out from HEAD; a
symbolic link HEAD has on that way (where the work tree has a real folder) would take the copy
anywhere it points. Such a run is refused before the worktree is made, and nothing outside the
project is written (issue 46: the host writes nothing through a link)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from tests.git.conftest import NEEDS_GIT, git
from tests.git.test_runs import CHANGE, cli

pytestmark = NEEDS_GIT


def digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_committed_link_the_copy_would_follow_refuses_the_run(
    project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "autostart"
    outside.mkdir()
    (outside / "keep.desktop").write_text("[Desktop Entry]\n")
    before = digests(outside)
    specs = project / "openspec/changes" / CHANGE / "specs"
    real = tmp_path / "real-specs"
    shutil.move(specs, real)
    specs.symlink_to(outside)  # what the last commit has: a link out of the repository
    git(project, "add", "-A", str(specs))
    git(project, "commit", "-q", "-m", "specs as a link", "--", str(specs))
    specs.unlink()
    shutil.move(real, specs)  # the work tree: a real folder, not yet committed
    proc = cli(project, "run", CHANGE, "--agent", "demo", "--isolation", "worktree", check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    words = f"openspec/changes/{CHANGE}/specs is a symbolic link in the last commit"
    assert words in proc.stdout.splitlines()[-1]
    assert digests(outside) == before, "the copy wrote outside the project"
    assert git(project, "branch", "--list", f"ralph/{CHANGE}") == ""
    assert os.path.isdir(specs) and not specs.is_symlink()
