"""Runs through the language server: the demo agent end to end, stop, guidance, stuck runs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.lsp.conftest import CHANGE, Session, StartSession, wait_until

STATUS_KEYS = {
    "runId",
    "change",
    "root",
    "state",
    "iteration",
    "maxIterations",
    "completed",
    "total",
    "reason",
    "startedAt",
    "updatedAt",
    "costUsd",
}


def final(s: Session) -> dict[str, Any] | None:
    if s.statuses and s.statuses[-1]["state"] != "running":
        return s.statuses[-1]
    return None


async def test_demo_run_to_success(start_session: StartSession, workspace: Path) -> None:
    s = await start_session(workspace, init={"trusted": True}, settings={"agent": "demo"})
    started = await s.command("ralph.run", {"change": CHANGE})
    assert set(started) == {"runId", "change", "state"}
    assert started["change"] == CHANGE and started["state"] == "running"
    run_id = started["runId"]

    end = await wait_until(lambda: final(s), timeout=60, what="the run's final status")
    assert end["state"] == "succeeded", end
    assert end["runId"] == run_id
    assert (end["completed"], end["total"]) == (8, 8)
    assert "- [ ]" not in s.tasks_md.read_text()

    # ralph/runStatus: a status on every change, the first running, all of the SPEC's shape.
    assert s.statuses[0]["state"] == "running"
    assert all(set(st) >= STATUS_KEYS for st in s.statuses)
    assert all(st["runId"] == run_id for st in s.statuses)
    assert [st["iteration"] for st in s.statuses] == sorted(st["iteration"] for st in s.statuses)

    # Work-done progress: one fresh token, begin … report … end, the end before the last status.
    assert len(s.client.progress_reports) == 1
    [(_, values)] = s.client.progress_reports.items()
    assert isinstance(values[0], types.WorkDoneProgressBegin)
    assert values[0].title == f"Ralph: {CHANGE}"
    assert isinstance(values[-1], types.WorkDoneProgressEnd)
    assert values[-1].message == f"succeeded: {end['reason']}"
    reports = [v for v in values if isinstance(v, types.WorkDoneProgressReport)]
    assert any(r.message == "iteration 3 · 8/8" and r.percentage == 100 for r in reports)
    assert all(r.message and r.message.startswith(("iteration ", "verifying")) for r in reports)
    kinds = [
        p.value.get("kind") if m == types.PROGRESS else m
        for m, p in s.timeline
        if m != types.WORKSPACE_CODE_LENS_REFRESH
    ]
    assert kinds.count("end") == 1 and kinds[-1] == "ralph/runStatus"
    last_status = len(kinds) - 1
    progress_end = kinds.index("end")
    assert progress_end < last_status

    # The agent's work and the orchestrator's events are in the log, batched.
    await wait_until(lambda: "■ succeeded" in s.logs(), what="the final log line")
    log = s.logs()
    assert "→ Edit openspec/changes/add-greeting-cli/tasks.md" in log
    assert "▶ iteration 1/20" in log
    assert len(s.client.log_messages) < log.count("\n")

    # Lenses are back to "Run", the history has the run, status and changes report it.
    await wait_until(lambda: s.refreshes, what="a codeLens refresh")
    assert (await s.lenses())[0][:3] == (0, "▶ Run change · 8/8 tasks", "ralph.run")
    history = await s.command("ralph.history", {"change": CHANGE})
    assert [r["runId"] for r in history["runs"]] == [run_id]
    assert history["runs"][0]["state"] == "succeeded"
    status = await s.command("ralph.status", {"change": CHANGE})
    assert [r["state"] for r in status["runs"]] == ["succeeded"]
    changes = await s.command("ralph.changes", {})
    assert changes["changes"][0]["run"]["runId"] == run_id
    assert s.diagnostics() == []


async def test_running_lenses_guide_second_run_and_stop(
    start_session: StartSession, workspace: Path
) -> None:
    s = await start_session(workspace, settings={"agent": "demo"}, env={"RALPH_DEMO_DELAY": "1.5"})
    started = await s.command("ralph.run", {"change": CHANGE, "root": workspace.as_uri()})
    run_id = started["runId"]
    await wait_until(
        lambda: any(st["iteration"] == 1 and st.get("story") == "1" for st in s.statuses),
        what="iteration 1 on story 1",
    )

    ref = [{"change": CHANGE, "root": workspace.as_uri()}]
    lenses = await s.lenses()
    assert lenses[0] == (0, "■ Stop · iteration 1 · 0/8 tasks", "ralph.stop", ref)
    assert lenses[1] == (0, "✎ Guide", "ralph.sendGuidance", ref)
    titles = {line: title for line, title, _, _ in lenses[2:]}
    assert [titles[n] for n in (3, 4, 5)] == ["● in progress"] * 3
    assert [titles[n] for n in (8, 9)] == ["○ pending"] * 2

    infos = await wait_until(
        lambda: [d for d in s.diagnostics() if d.severity == types.DiagnosticSeverity.Information],
        what="the information on the story being worked on",
    )
    assert [d.range.start.line for d in infos] == [2]
    assert run_id in infos[0].message and "iteration 1" in infos[0].message

    with pytest.raises(JsonRpcException) as info:
        await s.command("ralph.run", {"change": CHANGE})
    assert f"change '{CHANGE}' is already running (run {run_id}, iteration 1)" in (
        info.value.message
    )

    assert await s.command("ralph.guide", {"change": CHANGE, "text": "keep it small"}) == {
        "queued": True
    }

    stopped = await s.command("ralph.stop", {"change": CHANGE})
    assert stopped["state"] == "stopped" and stopped["runId"] == run_id
    assert set(stopped) >= STATUS_KEYS
    await wait_until(lambda: final(s), what="the final runStatus")
    assert s.statuses[-1]["state"] == "stopped"
    [(_, values)] = s.client.progress_reports.items()
    assert isinstance(values[-1], types.WorkDoneProgressEnd)
    assert values[-1].message is not None and values[-1].message.startswith("stopped")
    assert (await s.lenses())[0][2] == "ralph.run"
    await wait_until(
        lambda: (
            not any(d.severity == types.DiagnosticSeverity.Information for d in s.diagnostics())
        ),
        what="the information diagnostic to go",
    )
    history = await s.command("ralph.history", {"change": CHANGE})
    assert history["runs"][0]["guidance"][0]["text"] == "keep it small"


async def test_a_stuck_run_marks_the_unchecked_tasks(
    start_session: StartSession, workspace: Path
) -> None:
    idle = [sys.executable, "-c", "print('looked around, changed nothing')"]
    s = await start_session(
        workspace, settings={"agent": "custom", "agentCommand": idle, "stuckAfter": 1}
    )
    await s.command("ralph.run", {"change": CHANGE})
    end = await wait_until(lambda: final(s), timeout=30, what="the run to end")
    assert end["state"] == "stuck", end

    def stuck_warnings() -> list[types.Diagnostic]:
        return [d for d in s.diagnostics() if d.code == "run-stuck"]

    warned = await wait_until(lambda: len(stuck_warnings()) == 8 and stuck_warnings())
    assert all(d.severity == types.DiagnosticSeverity.Warning for d in warned)
    assert all(end["reason"] in d.message and end["runId"] in d.message for d in warned)
    assert [d.range.start.line for d in warned] == [3, 4, 5, 8, 9, 12, 13, 14]

    # Checking a task (here on disk, as an agent would) takes its warning away.
    s.tasks_md.write_text(s.tasks_md.read_text().replace("- [ ] 1.1", "- [x] 1.1"))
    await wait_until(lambda: len(stuck_warnings()) == 7, what="one warning fewer")
    assert 3 not in [d.range.start.line for d in stuck_warnings()]

    # The next run clears them.
    before = len(s.statuses)
    await s.command("ralph.run", {"change": CHANGE})
    await wait_until(lambda: len(s.statuses) > before, what="the second run's status")
    await wait_until(lambda: not stuck_warnings(), what="the warnings to clear")
    await wait_until(lambda: final(s) and s.statuses[-1]["runId"] != end["runId"], timeout=30)


async def test_parallel_runs_prefix_their_log_lines_and_cancelling_progress_stops_a_run(
    start_session: StartSession, workspace: Path
) -> None:
    changes = workspace / "openspec" / "changes"
    shutil.copytree(changes / CHANGE, changes / "second")
    s = await start_session(workspace, settings={"agent": "demo"}, env={"RALPH_DEMO_DELAY": "1"})
    first = await s.command("ralph.run", {"change": CHANGE})
    second = await s.command("ralph.run", {"change": "second"})
    # Once both run, every line says whose it is.
    await wait_until(
        lambda: "[second] " in s.logs() and f"[{CHANGE}] " in s.logs(),
        what="prefixed lines of both runs",
    )
    running = await s.command("ralph.status", {})
    assert {(r["change"], r["state"]) for r in running["runs"]} == {
        (CHANGE, "running"),
        ("second", "running"),
    }

    # The editor's cancel button on the second run's progress stops that run only.
    await wait_until(lambda: len(s.client.progress_reports) == 2, what="two progress tokens")
    token = next(
        t
        for t, values in s.client.progress_reports.items()
        if isinstance(values[0], types.WorkDoneProgressBegin) and values[0].title == "Ralph: second"
    )
    s.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    await wait_until(
        lambda: any(
            st["runId"] == second["runId"] and st["state"] == "stopped" for st in s.statuses
        ),
        what="the second run to stop",
    )
    status = await s.command("ralph.status", {"change": CHANGE})
    assert status["runs"][0]["runId"] == first["runId"]
    assert status["runs"][0]["state"] == "running"
    await s.command("ralph.stop", {"change": CHANGE})


async def test_a_client_without_refresh_progress_or_configuration(
    start_session: StartSession, workspace: Path
) -> None:
    # Nothing is asked of a client that did not say it can answer: settings come from
    # initializationOptions only, and there is no progress token and no lens refresh.
    s = await start_session(
        workspace, init={"agent": "demo"}, capabilities=types.ClientCapabilities()
    )
    await s.command("ralph.run", {"change": CHANGE})
    end = await wait_until(lambda: final(s), timeout=60, what="the run's final status")
    assert end["state"] == "succeeded"
    assert s.client.progress_reports == {}
    assert s.refreshes == []
    assert (await s.lenses())[0][1] == "▶ Run change · 8/8 tasks"


@pytest.mark.parametrize("client_profile", ["minimal"], indirect=True)
async def test_a_minimal_client_runs_to_success_from_initialization_options(
    start_session: StartSession, workspace: Path
) -> None:
    # No workspace/configuration, no codeLens/refresh, no work-done progress (as some editors'
    # clients): settings come from initializationOptions, and didChangeConfiguration still works.
    s = await start_session(workspace, settings={"agent": "custom", "agentCommand": ["false"]})
    s.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"ralph": {"agent": "demo"}})
    )
    await s.lenses()  # in order after the notification
    await s.command("ralph.run", {"change": CHANGE})
    end = await wait_until(lambda: final(s), timeout=60, what="the run's final status")
    assert end["state"] == "succeeded", end
    assert (await s.lenses())[0][1] == "▶ Run change · 8/8 tasks"
    assert s.refreshes == [] and s.client.progress_reports == {}
