"""A scratch copy of examples/toolbox: three independent changes the demo agent can do."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

TOOLBOX = REPO / "examples" / "toolbox"
CHANGES = ("add-slugify", "add-title-case", "add-word-count")


@pytest.fixture
def toolbox(tmp_path: Path) -> Path:
    root = tmp_path / "toolbox"
    shutil.copytree(TOOLBOX, root, ignore=shutil.ignore_patterns(".ralph", "__pycache__"))
    return root


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=60
    )
    return out.stdout


@pytest.fixture
def toolbox_git(toolbox: Path) -> Path:
    """The copy as a git repository with one commit, as a user who cloned it has."""
    git(toolbox, "init", "-q", "-b", "main")
    git(toolbox, "config", "user.email", "user@example.com")
    git(toolbox, "config", "user.name", "User")
    git(toolbox, "add", "-A")
    git(toolbox, "commit", "-qm", "start")
    return toolbox
