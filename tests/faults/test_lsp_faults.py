"""Faults through the language server: floods while requests keep being answered, stop of a
stubborn tree, the server killed or abandoned mid-run, two runs at once with one failing."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.faults.conftest import TASKS, make_change
from tests.faults.helpers import FaultEnv, alive, check_tasks, gone_within, wait_until
from tests.faults.lsp_raw import RawLsp

StartLsp = Callable[..., RawLsp]


def custom(fx: FaultEnv, *mode: str, **more: object) -> dict[str, object]:
    return {"agent": "custom", "agentCommand": fx.agent(*mode), **more}


def test_smoke_run_through_the_server(fx: FaultEnv, start_lsp: StartLsp) -> None:
    server = start_lsp(custom(fx, "check"))
    answer = server.command("ralph.run", {"change": "alpha"})
    assert answer["result"]["state"] == "running", answer
    final = server.wait_final("alpha")
    assert final["state"] == "succeeded", final
    assert fx.record()["state"] == "succeeded"
    assert fx.tasks().read_bytes() == check_tasks(TASKS.encode(), 3)


ONE_TASK = "## 1. Only\n- [ ] 1.1 The one task\n"


def test_server_answers_requests_during_a_flood(fx: FaultEnv, start_lsp: StartLsp) -> None:
    """While the agent writes as fast as it can, ``ralph.status`` and code lenses still answer
    within a few seconds (typically milliseconds)."""
    make_change(fx.root, "solo", ONE_TASK)
    release = fx.tmp / "release"
    fx.env["FAULT_RELEASE"] = str(release)
    server = start_lsp(custom(fx, "flood-until"))
    assert "result" in server.command("ralph.run", {"change": "solo"})
    spawn = wait_until(fx.spawns, 20, "the agent to start")[0]
    wait_until(lambda: "flooding line" in server.logs(), 20, "the flood to reach the log")
    uri = fx.tasks("solo").as_uri()
    latencies: list[float] = []
    for _ in range(6):
        t0 = time.monotonic()
        runs = server.result("workspace/executeCommand", {"command": "ralph.status"}, 10)["runs"]
        latencies.append(time.monotonic() - t0)
        assert runs[0]["state"] == "running"
        t0 = time.monotonic()
        lenses = server.code_lens(uri, 10)
        latencies.append(time.monotonic() - t0)
        assert any("Stop" in lens["command"]["title"] for lens in lenses)
    # The flood was on during every request: the agent runs until it is released.
    assert alive(spawn["pid"]) and not release.exists()
    logged_during = len(server.of("window/logMessage"))
    release.touch()
    final = server.wait_final("solo")
    assert final["state"] == "succeeded", final
    assert max(latencies) < 3.0, latencies
    assert logged_during > 1
    assert fx.record("solo")["state"] == "succeeded"
    assert gone_within([spawn["pid"]], 0) == []


@pytest.mark.parametrize(
    ("kind", "marker"),
    [
        ("lines", "flood line 99999 of 100000"),
        ("long", "after the long line"),
        ("binary", "after the binary"),
        ("ansi", "after the escapes"),
    ],
)
def test_flood_through_the_server_ends_sanely(
    fx: FaultEnv, start_lsp: StartLsp, kind: str, marker: str
) -> None:
    make_change(fx.root, "solo", ONE_TASK)
    server = start_lsp(custom(fx, "flood", kind))
    assert "result" in server.command("ralph.run", {"change": "solo"})
    final = server.wait_final("solo", 60)
    assert final["state"] == "succeeded", final
    assert server.result("workspace/executeCommand", {"command": "ralph.status"}, 5)["runs"]
    wait_until(lambda: marker in server.logs(), 10, "the line after the flood in the log")
    text = server.logs()
    assert "\x1b" not in text and "\x00" not in text
    assert max(len(line) for line in text.split("\n")) < 20_000
    assert fx.tasks("solo").read_text() == ONE_TASK.replace("[ ]", "[x]")
