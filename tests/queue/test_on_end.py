"""`--on-end CMD` / `ralph.onRunEnd` (SPEC §9): the end event as JSON on stdin, no shell,
bounded in time, and a failing or hanging command changes nothing."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import time
from pathlib import Path

from ralph_lsp.cli.common import EXIT_CODES
from ralph_lsp.loop.engine import Engine
from ralph_lsp.loop.on_end import notify
from ralph_lsp.loop.queue import Queue
from ralph_lsp.settings import Settings
from tests.cli.test_cli import ralph
from tests.conftest import alive
from tests.queue.conftest import CHANGES

SAVE = "import sys, pathlib; pathlib.Path(sys.argv[1]).open('a').write(sys.stdin.read())"


def save_stdin(to: Path) -> str:
    return shlex.join([sys.executable, "-c", SAVE, str(to)])


def test_a_queue_and_each_run_send_their_end_event(toolbox: Path, tmp_path: Path) -> None:
    got = tmp_path / "events.jsonl"
    out = ralph(
        "run",
        *CHANGES[:2],
        "--root",
        str(toolbox),
        "--agent",
        "demo",
        "--on-end",
        save_stdin(got),
        timeout=240,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    events = [json.loads(line) for line in got.read_text().splitlines()]
    assert [(e["type"], e["kind"]) for e in events] == [("end", "run")] * 2 + [("end", "queue")]
    assert all(e["v"] == 1 and e["state"] in ("succeeded", "done") for e in events)
    assert {e["status"]["change"] for e in events[:2]} == set(CHANGES[:2])
    queue = events[-1]["queue"]
    assert [i["state"] for i in queue["items"]] == ["succeeded", "succeeded"]
    assert events[-1]["reason"] == "2/2 succeeded"
    assert out.stdout.splitlines()[-1] == "done: 2/2 succeeded"  # its word goes to stderr


# Writes the event's kind; a run's command takes a second first.
ORDERED = (
    "import json, pathlib, sys, time\n"
    "event = json.loads(sys.stdin.read())\n"
    "time.sleep(1.0 if event['kind'] == 'run' else 0)\n"
    "pathlib.Path(sys.argv[1]).open('a').write(event['kind'] + '\\n')\n"
)


async def test_the_queue_starts_its_command_after_its_runs(toolbox: Path, tmp_path: Path) -> None:
    """No host calls a command: the engine starts each run's as the run ends, the queue its own
    as it ends, once its runs' have ended, so the last run's slow command still comes first."""
    got = tmp_path / "order"
    argv = (sys.executable, "-c", ORDERED, str(got))
    said: list[tuple[str, str]] = []
    queue = Queue(Engine(), toolbox, CHANGES[:2], Settings(agent="demo", on_run_end=argv))
    queue.say_end = lambda text, level: said.append((text, level))
    await queue.start()
    status = await queue.wait()
    assert status["state"] == "done" and status["reason"] == "2/2 succeeded"
    await queue.ends_told()
    assert got.read_text().splitlines() == ["run", "run", "queue"]
    assert said == [(f"onRunEnd: {' '.join(argv)} ran", "info")]  # the queue's, to its host
    await queue.ends_told()  # once: awaiting again starts nothing
    assert got.read_text().splitlines() == ["run", "run", "queue"]


def test_one_runs_end_event_and_no_shell(toolbox: Path, tmp_path: Path) -> None:
    got = tmp_path / "event.json"
    # `;` and `$(…)` are plain arguments, never a shell's: nothing is run but the program.
    command = save_stdin(got) + " ';' 'touch $(echo pwned)'"
    out = ralph(
        "run",
        CHANGES[0],
        "--root",
        str(toolbox),
        "--agent",
        "demo",
        "--on-end",
        command,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    event = json.loads(got.read_text())
    assert event["kind"] == "run" and event["state"] == "succeeded"
    assert event["reason"] == out.stdout.splitlines()[-1].removeprefix("succeeded: ")
    assert not (toolbox / "pwned").exists() and not (tmp_path / "pwned").exists()


def test_a_failing_command_changes_nothing(toolbox: Path) -> None:
    fail = shlex.join([sys.executable, "-c", "import sys; print('webhook down'); sys.exit(7)"])
    out = ralph(
        "run",
        CHANGES[0],
        "--root",
        str(toolbox),
        "--agent",
        "demo",
        "--on-end",
        fail,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1].startswith("succeeded: ")
    assert "onRunEnd:" in out.stderr and "exited 7: webhook down" in out.stderr
    missing = ralph(
        "run",
        CHANGES[1],
        "--root",
        str(toolbox),
        "--agent",
        "demo",
        "--on-end",
        "no-such-program-xyz",
        timeout=120,
    )
    assert missing.returncode == 0 and "could not start" in missing.stderr


def test_a_hanging_command_is_stopped_with_its_tree(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    hang = [
        sys.executable,
        "-c",
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(600)\n",
    ]
    said: list[tuple[str, str]] = []
    started = time.monotonic()
    code = asyncio.run(
        notify(hang, {"type": "end"}, tmp_path, lambda t, lv: said.append((t, lv)), timeout=2)
    )
    assert code is None and time.monotonic() - started < 15
    assert said and said[-1][1] == "warning" and "did not end within 2s" in said[-1][0]
    deadline = time.monotonic() + 5
    pid_list = [int(p) for p in pids.read_text().split()]
    while any(alive(p) for p in pid_list) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in pid_list)


def _wait_for(path: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return path.exists()


def test_a_detached_runs_command_runs_when_nobody_watches(toolbox: Path, tmp_path: Path) -> None:
    """``run --detach --on-end``: the runner that hosts the run starts the command as the run
    ends, with no terminal or editor attached (it was started by the server alone, which a
    closed editor never saw end: then nobody ran it)."""
    got = tmp_path / "event.json"
    started = ralph(
        "run",
        CHANGES[0],
        "--root",
        str(toolbox),
        "--agent",
        "demo",
        "--detach",
        "--on-end",
        save_stdin(got),
        timeout=60,
    )
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    assert _wait_for(got, 120), "the detached run's --on-end never ran"
    event = json.loads(got.read_text())
    assert event["kind"] == "run" and event["status"]["runId"] == run_id
    assert event["state"] == "succeeded"
    time.sleep(1.0)
    assert len(got.read_text().splitlines()) == 1  # once


def test_a_planning_runs_command_runs_too(toolbox: Path, tmp_path: Path) -> None:
    """``plan --on-end`` (SPEC §14 takes ``run``'s flag): the planning run's end event."""
    got = tmp_path / "event.json"
    out = ralph(
        "plan",
        "add-widget",
        "--describe",
        "A widget that says hello",
        "--root",
        str(toolbox),
        "--agent",
        "demo",
        "--on-end",
        save_stdin(got),
        timeout=120,
    )
    assert out.returncode == EXIT_CODES["planned"], out.stdout + out.stderr
    event = json.loads(got.read_text())
    assert event["kind"] == "run" and event["state"] == "planned"
    assert "onRunEnd:" in out.stderr and "onRunEnd:" not in out.stdout
