"""Two runs of different changes at once in one server, one failing: the other is unaffected
and succeeds. Both use the same agent command; each change's tasks.md tells the fault agent
how to behave (a ``<!-- fault: … -->`` line), as the server has one set of settings."""

from __future__ import annotations

from collections.abc import Callable

from tests.faults.conftest import TASKS, make_change
from tests.faults.helpers import FaultEnv, check_tasks, gone_within, wait_until
from tests.faults.lsp_raw import RawLsp

StartLsp = Callable[..., RawLsp]

SLOW = "<!-- fault: check-after-release -->\n" + TASKS
FAILING = "<!-- fault: signal 9 -->\n" + TASKS


def test_one_run_fails_while_another_goes_on(fx: FaultEnv, start_lsp: StartLsp) -> None:
    fx.tasks().write_text(SLOW)
    make_change(fx.root, "beta", FAILING)
    release = fx.logs / "release"
    fx.env["FAULT_RELEASE"] = str(release)
    server = start_lsp({"agent": "custom", "agentCommand": fx.agent("directive")})
    assert "result" in server.command("ralph.run", {"change": "alpha"})
    wait_until(fx.spawns, 20, "alpha's agent to start")
    assert "result" in server.command("ralph.run", {"change": "beta"})

    # beta fails while alpha's first iteration is still under way.
    beta = server.wait_final("beta")
    assert beta["state"] == "failed"
    assert beta["reason"].startswith("the agent failed the same way twice"), beta["reason"]
    running = server.result("workspace/executeCommand", {"command": "ralph.status"})["runs"]
    assert {(r["change"], r["state"]) for r in running} == {
        ("alpha", "running"),
        ("beta", "failed"),
    }
    assert "[beta]" in server.logs(), "with two runs active, log lines name their change"

    release.touch()
    alpha = server.wait_final("alpha")
    assert (alpha["state"], alpha["reason"]) == ("succeeded", "every task is checked (3/3)")
    assert alpha["completed"] == alpha["total"] == 3

    record = fx.record("alpha")
    assert [(i["exitCode"], i["tasksChecked"]) for i in record["iterations"]] == [(0, 1)] * 3
    assert fx.record("beta")["state"] == "failed"
    assert fx.tasks().read_bytes() == check_tasks(SLOW.encode(), 3)
    assert fx.tasks("beta").read_text() == FAILING
    assert gone_within(fx.pids(), 0) == []
    assert len(fx.spawns()) == 5  # alpha 3, beta 2


def test_two_clis_at_once_one_failing(fx: FaultEnv) -> None:
    """The same through two ``ralph-lsp run`` processes on one project (two terminals)."""
    fx.tasks().write_text(SLOW)
    make_change(fx.root, "beta", FAILING)
    release = fx.logs / "release"
    fx.env["FAULT_RELEASE"] = str(release)
    cmd = fx.agent_command("directive")
    alpha = fx.start_cli("alpha", "--agent-command", cmd, name="alpha")
    try:
        wait_until(fx.spawns, 20, "alpha's agent to start")
        beta = fx.run_cli("beta", "--agent-command", cmd, name="beta")
        assert beta.returncode == 1
        assert beta.last_line.startswith("failed: the agent failed the same way twice")
        assert alpha.poll() is None
        release.touch()
        assert alpha.wait(30) == 0
    finally:
        if alpha.poll() is None:
            alpha.kill()
            alpha.wait()
    out, _ = fx.cli_output("alpha")
    assert out.rstrip().split("\n")[-1] == "succeeded: every task is checked (3/3)"
    assert fx.record("alpha")["state"] == "succeeded"
    assert fx.record("beta")["state"] == "failed"
    assert fx.tasks().read_bytes() == check_tasks(SLOW.encode(), 3)
    assert fx.tasks("beta").read_text() == FAILING
