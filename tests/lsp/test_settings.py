"""Settings from the client and workspace trust."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import CHANGE, Session, StartSession, wait_until
from tests.tags import scratch


def push(s: Session, settings: object) -> None:
    s.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=settings)
    )


async def test_an_untrusted_workspace_refuses_to_run_until_trusted(
    start_session: StartSession, workspace: Path, tmp_path: Path
) -> None:
    marker = scratch(workspace) / "agent-ran"  # in the work tree: the agent runs sandboxed
    agent = [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').close()", str(marker)]
    settings = {"agent": "custom", "agentCommand": agent, "stuckAfter": 1}
    s = await start_session(workspace, init={"trusted": False, **settings}, settings=settings)

    with pytest.raises(JsonRpcException) as info:
        await s.command("ralph.run", {"change": CHANGE})
    assert "not trusted" in info.value.message
    assert "trust the workspace" in info.value.message
    assert not marker.exists()
    assert s.statuses == []
    # Everything that runs nothing still works.
    assert (await s.command("ralph.changes", {}))["changes"][0]["name"] == CHANGE
    assert (await s.lenses())[0][2] == "ralph.run"

    push(s, {"ralph": {**settings, "trusted": True}})
    await s.command("ralph.run", {"change": CHANGE})
    await wait_until(lambda: marker.exists(), timeout=20, what="the agent to run once trusted")
    await wait_until(
        lambda: s.statuses and s.statuses[-1]["state"] != "running", timeout=20, what="the end"
    )


async def test_program_settings_are_not_read_while_untrusted(
    start_session: StartSession, workspace: Path
) -> None:
    bad = {"agentCommand": 5, "maxIterations": "many"}
    s = await start_session(workspace, init={"trusted": False, **bad}, settings=bad)
    await wait_until(lambda: "ralph.maxIterations" in s.logs(), what="the maxIterations warning")
    assert "agentCommand" not in s.logs()  # not even looked at

    push(s, {"ralph": {**bad, "trusted": True}})
    await wait_until(lambda: "ralph.agentCommand" in s.logs(), what="the agentCommand warning")


async def test_a_wrong_typed_setting_is_reported_once(
    start_session: StartSession, workspace: Path
) -> None:
    bad = {"agent": "demo", "maxIterations": "lots"}
    s = await start_session(workspace, init=bad, settings=bad)
    for _ in range(3):
        push(s, {"ralph": bad})  # pushed
        push(s, None)  # "something changed": the server pulls
    await s.command("ralph.run", {"change": CHANGE})  # pulls once more
    await wait_until(
        lambda: s.statuses and s.statuses[-1]["state"] == "succeeded", timeout=60, what="success"
    )
    await wait_until(lambda: "■ succeeded" in s.logs(), what="the last log line")
    assert s.logs().count("ralph.maxIterations: expected a whole number") == 1
    assert s.statuses[-1]["maxIterations"] == 20  # the default was used


async def test_a_client_that_sends_no_trust_is_trusted(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace, settings={"agent": "demo"})
    await s.command("ralph.run", {"change": CHANGE, "maxIterations": 1})
    end = await wait_until(
        lambda: s.statuses and s.statuses[-1]["state"] != "running" and s.statuses[-1],
        timeout=30,
    )
    # One iteration allowed: story 1 done, tasks remain.
    assert end["state"] == "exhausted" and end["maxIterations"] == 1
