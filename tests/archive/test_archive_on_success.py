"""A verified demo run with archiveOnSuccess archives its change, and the specs it writes are the
bytes the real `openspec archive --yes` writes for the same project (SPEC §11)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ralph_lsp.archiving.writer import today
from tests.conftest import EXAMPLE, openspec_cli

CHANGE = "add-greeting-cli"


def demo_project(root: Path) -> Path:
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".ralph", "__pycache__"))
    return root


def run(root: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ralph_lsp", "run", CHANGE, "--agent", "demo", *flags],
        cwd=root,
        env={**os.environ, "RALPH_DEMO_DELAY": "0"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def specs(root: Path) -> dict[str, bytes]:
    folder = root / "openspec" / "specs"
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# Two demo runs and the real OpenSpec CLI's archive to compare with (about 7 s): the full
# suite's (`make test`).
@pytest.mark.slow
def test_a_verified_run_archives_what_openspec_archive_writes(tmp_path: Path) -> None:
    ours = demo_project(tmp_path / "ours")
    done = run(ours, "--archive-on-success")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    archived = f"{today()}-{CHANGE}"
    assert f"archiveOnSuccess: archived {CHANGE} as {archived}" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].endswith(f"; archived as {archived}")
    assert (ours / "openspec/changes/archive" / archived / "tasks.md").is_file()
    assert not (ours / "openspec/changes" / CHANGE).exists()

    theirs = demo_project(tmp_path / "theirs")
    assert run(theirs).returncode == 0
    env = {
        **os.environ,
        "OPENSPEC_TELEMETRY": "0",
        "DO_NOT_TRACK": "1",
        "OPENSPEC_NO_UPDATE_CHECK": "1",
        "NO_COLOR": "1",
        "CI": "1",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    cli = subprocess.run(
        [openspec_cli(), "archive", CHANGE, "--yes"],
        cwd=theirs,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert specs(ours) == specs(theirs)
    assert specs(ours)["greeting/spec.md"].startswith(b"# greeting Specification")


def test_without_the_setting_nothing_is_archived(tmp_path: Path) -> None:
    root = demo_project(tmp_path / "p")
    done = run(root)
    assert done.returncode == 0
    assert "archiveOnSuccess" not in done.stdout
    assert (root / "openspec/changes" / CHANGE / "tasks.md").is_file()


def test_a_link_left_in_the_specs_is_not_written_through(tmp_path: Path) -> None:
    """A run that leaves ``openspec/specs/<cap>/spec.md`` a dangling link (to a login script
    outside): archiveOnSuccess refuses, the run still succeeds, the link's target is never made
    and the change stays where it was (issue 46, fault 2)."""
    ours = demo_project(tmp_path / "ours")
    login = tmp_path / "home" / ".bash_login"
    login.parent.mkdir()
    (ours / "openspec/specs/greeting").mkdir(parents=True)
    (ours / "openspec/specs/greeting/spec.md").symlink_to(login)
    done = run(ours, "--archive-on-success")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (
        f"archiveOnSuccess: {CHANGE} was not archived: openspec/specs/greeting/spec.md is a"
        " symbolic link: archive writes nothing through links" in done.stdout
    )
    assert not login.exists() and list(login.parent.iterdir()) == []
    assert (ours / "openspec/changes" / CHANGE / "tasks.md").is_file()
