"""History that stays bounded: the newest historyKeepRuns runs of a change are kept, raw output
is capped per run (oldest iterations dropped first), and run ids never collide."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ralph_lsp.loop.engine import Engine
from ralph_lsp.runs.history import RunHistory, load_records
from ralph_lsp.settings import Settings
from tests.engine.conftest import CHANGE, fake


async def run_once(project: Path, settings: Settings) -> str:
    engine = Engine()
    status = await engine.start(project, CHANGE, settings)
    await engine.wait(project, CHANGE)
    return status.run_id


def run_folders(project: Path) -> list[str]:
    return sorted(p.name for p in (project / ".ralph" / "runs").iterdir())


async def test_only_the_newest_runs_of_a_change_are_kept(project: Path) -> None:
    settings = Settings(
        agent="custom",
        agent_command=tuple(fake("no_progress.py")),
        stuck_after=1,
        history_keep_runs=2,
    )
    ids = [await run_once(project, settings) for _ in range(4)]
    assert len(set(ids)) == 4
    assert run_folders(project) == sorted(ids[-2:])
    assert [r["runId"] for r in load_records(project, CHANGE)] == ids[-1:-3:-1]


async def test_raw_output_is_capped_per_run_oldest_first(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = 3 * 1024 * 1024
    monkeypatch.setattr(RunHistory, "max_run_bytes", cap)
    settings = Settings(
        agent="custom",
        agent_command=tuple(fake("flood.py", "lines", "50000")),  # ~1.1 MB per iteration
        stuck_after=4,
    )
    run_id = await run_once(project, settings)
    folder = project / ".ralph" / "runs" / run_id
    logs = {p.name: p.stat().st_size for p in folder.glob("iteration-*.log")}
    assert sum(logs.values()) <= cap, logs
    record = load_records(project, CHANGE)[0]
    assert record["state"] == "stuck"
    assert len(record["iterations"]) == 4  # the summaries stay
    assert record["rawOutputDropped"] == [1, 2]
    assert sorted(logs) == ["iteration-3.log", "iteration-4.log"]


def test_run_ids_of_processes_started_in_the_same_second_differ() -> None:
    code = "from ralph_lsp.runs.history import new_run_id; print(new_run_id())"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    ids = [p.communicate(timeout=30)[0].strip() for p in procs]
    assert len(set(ids)) == 8, ids
