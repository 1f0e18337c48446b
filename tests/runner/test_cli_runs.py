"""``ralph-lsp run --detach``, ``runs``, ``attach``, ``stop``, ``guide`` and ``run --events``,
each a real ``ralph-lsp`` process acting on real runner processes."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from ralph_lsp.runner import events
from ralph_lsp.runner.live import find_live
from tests.conftest import alive
from tests.runner.conftest import (
    PY,
    children_of,
    cli,
    demo_settings,
    fake_settings,
    record,
    wait_for,
)
from tests.tags import terminal_signals


def flags(raw: dict[str, object]) -> list[str]:
    out: list[str] = []
    if raw["agent"] == "custom":
        import shlex

        out += ["--agent-command", shlex.join(raw["agentCommand"])]  # type: ignore[arg-type]
    else:
        out += ["--agent", str(raw["agent"])]
    out += ["--verify-when", "off", "--no-checkpoints"]
    for name, value in dict(raw.get("env") or {}).items():  # type: ignore[call-overload]
        out += ["--env", f"{name}={value}"]
    return out


def test_detach_list_guide_stop_from_separate_terminals(project: Path) -> None:
    started = cli(
        "run", "a", "--root", str(project), "--detach", *flags(fake_settings("sleep_forever.py"))
    )
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    assert run_id.startswith("r-")
    [live] = find_live(project)
    assert live.run_id == run_id
    tree = wait_for(lambda: [p for p in children_of(live.pid) if alive(p)][1:], 20)

    listed = cli("runs", "--root", str(project), "--json")
    [row] = [r for r in json.loads(listed.stdout)["runs"] if r["runId"] == run_id]
    assert row["live"] and row["state"] == "running" and row["pid"] == live.pid
    assert row["total"] == 4 and row["iteration"] == 1
    table = cli("runs", "--root", str(project)).stdout
    assert run_id in table and "running" in table and str(live.pid) in table

    guided = cli("guide", "a", "Keep the public API", "--root", str(project))
    assert guided.returncode == 0, guided.stderr
    assert record(project)["guidance"][0]["text"] == "Keep the public API"

    stopped = cli("stop", "a", "--root", str(project))
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.startswith("stopped: ")
    assert [p for p in [live.pid, *tree] if alive(p)] == [] or wait_for(
        lambda: not any(alive(p) for p in [live.pid, *tree]), 5
    )
    again = cli("stop", "a", "--root", str(project))
    assert again.returncode == 1
    assert "change 'a' has no live run" in again.stderr
    nothing = cli("guide", "a", "x", "--root", str(project))
    assert nothing.returncode == 1 and "no live run" in nothing.stderr


def test_runs_shows_a_killed_runner_as_interrupted_with_when_it_was_last_seen(
    project: Path,
) -> None:
    started = cli(
        "run", "a", "--root", str(project), "--detach", *flags(fake_settings("sleep_forever.py"))
    )
    assert started.returncode == 0, started.stderr
    [live] = find_live(project)
    tree = wait_for(lambda: [p for p in children_of(live.pid) if alive(p)][1:], 20)
    import os

    os.kill(live.pid, signal.SIGKILL)
    wait_for(lambda: not any(alive(p) for p in [live.pid, *tree]), 2.5, 0.02)
    listed = json.loads(cli("runs", "--root", str(project), "--json").stdout)["runs"]
    [row] = listed
    assert row["state"] == "interrupted" and not row["live"]
    assert "last seen" in row["reason"]
    # Running the change again continues from tasks.md.
    again = cli("run", "a", "--root", str(project), *flags(demo_settings(0.01)))
    assert again.returncode == 0, again.stdout + again.stderr


def test_attach_follows_to_the_end_with_the_runs_exit_code(project: Path) -> None:
    started = cli("run", "a", "--root", str(project), "--detach", *flags(demo_settings(0.4)))
    assert started.returncode == 0, started.stderr
    attached = cli("attach", "a", "--root", str(project))
    assert attached.returncode == 0, attached.stderr
    lines = attached.stdout.strip().splitlines()
    assert lines[-1].startswith("succeeded: every task is checked (4/4)")
    assert any("iteration" in line for line in lines)


def test_ctrl_c_detaches_attach_and_the_run_goes_on(project: Path) -> None:
    started = cli("run", "a", "--root", str(project), "--detach", *flags(demo_settings(1.0)))
    assert started.returncode == 0, started.stderr
    proc = subprocess.Popen(
        [PY, "-m", "ralph_lsp", "attach", "a", "--root", str(project)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=terminal_signals,  # Ctrl-C as a terminal's foreground job gets it
    )
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert out.strip().splitlines()[-1].startswith("detached: the run of a goes on")
    assert len(find_live(project)) == 1  # still running
    assert cli("stop", "a", "--root", str(project)).returncode == 0


def test_run_events_prints_the_stream_ending_with_end(project: Path) -> None:
    done = cli("run", "a", "--root", str(project), "--events", *flags(demo_settings(0.01)))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    objs = [json.loads(line) for line in lines]
    assert all(o["v"] == events.VERSION and o["type"] in events.EVENTS for o in objs)
    assert all(events.loads(line) is not None for line in lines)
    assert objs[-1]["type"] == "end" and objs[-1]["state"] == "succeeded"
    kinds = {o["type"] for o in objs}
    assert {"status", "log", "iteration", "end"} <= kinds


def test_stop_reaches_a_run_started_in_a_terminal(project: Path) -> None:
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "ralph_lsp",
            "run",
            "a",
            "--root",
            str(project),
            *flags(fake_settings("sleep_forever.py")),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: find_live(project), 20)
        stopped = cli("stop", "a", "--root", str(project))
        assert stopped.returncode == 0, stopped.stderr
        out, _ = proc.communicate(timeout=20)
        assert proc.returncode == 5
        assert out.strip().splitlines()[-1].startswith("stopped: ")
    finally:
        if proc.poll() is None:
            proc.kill()
