"""One run per change on the machine (found in review: two processes ran the same change at
once, both records said `running`, and two agents edited the same files). A run claims its
change with an advisory lock held while its process lives: no lock file can go stale."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults.helpers import FaultEnv, alive, wait_until
from tests.faults.lsp_raw import RawLsp

StartLsp = Callable[..., RawLsp]

# Once per process inspection (linux, portable): see tests/conftest.py.
pytestmark = pytest.mark.usefixtures("inspection")


def _slow_cli(fx: FaultEnv) -> subprocess.Popen[bytes]:
    fx.env["FAULT_RELEASE"] = str(fx.logs / "release")
    cli = fx.start_cli("alpha", "--agent-command", fx.agent_command("check-after-release"))
    wait_until(fx.spawns, 20, "the first run's agent to start")
    return cli


def _run_id(fx: FaultEnv) -> str:
    [folder] = (fx.root / ".ralph" / "runs").iterdir()
    return folder.name


def test_a_second_cli_run_of_a_running_change_is_refused(fx: FaultEnv) -> None:
    cli = _slow_cli(fx)
    second = fx.ralph("run", "alpha", "--agent-command", fx.agent_command("check"))
    assert second.returncode == 2, second.stdout + second.stderr
    assert second.stderr.strip() == (
        "ralph-lsp: error: change 'alpha' is already running in another ralph-lsp process"
        f" (pid {cli.pid}, run {_run_id(fx)})"
    )
    assert second.stdout == ""  # no run started: no `<state>: <reason>` line
    assert len(fx.spawns()) == 1 and len(list((fx.root / ".ralph" / "runs").iterdir())) == 1
    (fx.logs / "release").touch()
    assert cli.wait(60) == 0
    assert fx.record()["state"] == "succeeded"


def test_the_server_refuses_it_too_and_shows_it_running_elsewhere(
    fx: FaultEnv, start_lsp: StartLsp
) -> None:
    cli = _slow_cli(fx)
    server = start_lsp({"agent": "custom", "agentCommand": fx.agent("check")})
    answer = server.command("ralph.run", {"change": "alpha"})
    message = answer["error"]["message"]
    assert f"already running in another ralph-lsp process (pid {cli.pid}" in message

    def titles() -> list[str]:
        lenses = server.code_lens(fx.tasks().as_uri())
        return [lens["command"]["title"] for lens in lenses if lens["range"]["start"]["line"] == 0]

    # v3: the CLI's run is live, so the server follows it as if it had started it (SPEC §9),
    # once it has attached (at start, in the background: "running elsewhere" until then).
    attached = ["■ Stop · iteration 1 · 0/3 tasks", "✎ Guide"]
    wait_until(lambda: titles() == attached, 15, f"the attached run's lenses ({titles()})")
    (fx.logs / "release").touch()
    assert cli.wait(60) == 0
    assert len(fx.spawns()) == 3  # only the CLI's agent ever ran


def test_a_claim_dies_with_its_process(fx: FaultEnv) -> None:
    cli = _slow_cli(fx)
    agent = fx.pids()[0]
    cli.send_signal(signal.SIGKILL)
    cli.wait(10)
    wait_until(lambda: not alive(agent), 10, "the agent to go with its CLI")
    history = json.loads(fx.ralph("history", "alpha", "--json").stdout)
    assert history["runs"][0]["reason"].startswith("interrupted:")
    (fx.logs / "release").touch()
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("check"), name="again")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.last_line == "succeeded: every task is checked (3/3)"
    states = [r["state"] for r in json.loads(fx.ralph("history", "alpha", "--json").stdout)["runs"]]
    assert states == ["succeeded", "interrupted"]  # the killed run's record stays, as interrupted


def test_a_claim_alone_leaves_the_work_tree_clean(tmp_path: Path) -> None:
    """A change's claim is written before any record (a Ray run claims its change before it
    pushes): ``.ralph/`` gets its ``.gitignore`` first, so git sees nothing new, and a Ray
    run does not refuse the tree its own claim dirtied."""
    from ralph_lsp.runs.claims import ChangeClaim

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    claim = ChangeClaim.take(tmp_path, "alpha", "r-1")
    try:
        assert (tmp_path / ".ralph" / "locks" / "alpha.lock").is_file()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        )
        assert status.stdout == ""
    finally:
        claim.release()
