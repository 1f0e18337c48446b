"""A detached runner (``python -m ralph_lsp.runner``), through real processes: it runs to the
end on its own, takes stop and guidance from any client, dies without leaving its agent behind,
and is found (or not) as its live file and claim say."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from ralph_lsp.loop.engine import LogEvent
from ralph_lsp.runner.client import Attachment, request, spawn
from ralph_lsp.runner.live import LiveRun, find_live, live_path, write_live
from ralph_lsp.runs.events import EndEvent
from ralph_lsp.settings import settings_from_dict
from tests.conftest import alive
from tests.runner.conftest import (
    children_of,
    demo_settings,
    fake_settings,
    record,
    wait_for,
)


def settings(raw: dict[str, object]):  # type: ignore[no-untyped-def]
    parsed, warnings = settings_from_dict(raw)
    assert warnings == []
    return parsed


async def test_a_detached_runner_runs_to_the_end_and_leaves_nothing(project: Path) -> None:
    spawned = await spawn(project, "a", settings(demo_settings(0.05)))
    [live] = find_live(project)
    assert (live.pid, live.run_id) == (spawned.pid, spawned.run_id)
    assert await asyncio.wait_for(spawned.process.wait(), 60) == 0
    assert record(project)["state"] == "succeeded"
    assert not live_path(project, "a").exists()
    assert not Path(live.socket).exists()
    assert find_live(project) == []


async def test_guidance_from_a_client_is_in_the_next_prompt(project: Path) -> None:
    spawned = await spawn(project, "a", settings(demo_settings(0.8)))
    [live] = find_live(project)
    seen: list[object] = []
    attached = Attachment(live, seen.append)
    await attached.open()
    await asyncio.wait_for(attached.first_status.wait(), 10)
    while not (attached.status and attached.status.iteration >= 1):  # iteration 1's prompt is out
        await asyncio.sleep(0.02)
    reply = await attached.send({"type": "guide", "text": "Prefer small functions"}, 10)
    assert reply["ok"] is True
    await asyncio.wait_for(attached.closed, 60)
    assert await asyncio.wait_for(spawned.process.wait(), 10) == 0
    prompt = (project / ".ralph" / "runs" / spawned.run_id / "prompt-2.md").read_text()
    assert "Prefer small functions" in prompt
    [guidance] = record(project)["guidance"]
    assert guidance["deliveredIn"] == 2
    kinds = [type(e).__name__ for e in seen]
    assert kinds[0] == "StatusEvent" and kinds[-1] == "EndEvent", kinds
    assert "GuidanceEvent" in kinds and "IterationEvent" in kinds
    assert isinstance(seen[-1], EndEvent) and seen[-1].state == "succeeded"


async def test_stop_from_a_client_ends_the_run_and_its_agent(project: Path) -> None:
    spawned = await spawn(project, "a", settings(fake_settings("sleep_forever.py")))
    [live] = find_live(project)
    agents = wait_for(lambda: [p for p in children_of(spawned.pid) if alive(p)][1:], 20)
    reply = await request(live, {"type": "stop"})
    assert reply["ok"] is True and reply["status"]["state"] == "stopped"
    assert [p for p in agents if alive(p)] == []  # the reply came once the tree was gone
    assert await asyncio.wait_for(spawned.process.wait(), 10) == 0
    assert record(project)["state"] == "stopped"


async def test_a_sigkilled_runner_takes_its_agent_tree_along_and_reads_interrupted(
    project: Path,
) -> None:
    spawned = await spawn(project, "a", settings(fake_settings("sleep_forever.py")))
    tree = wait_for(lambda: [p for p in children_of(spawned.pid) if alive(p)][1:], 20)
    assert tree, "the agent is not running"
    [live] = find_live(project)
    os.kill(spawned.pid, signal.SIGKILL)
    killed = time.monotonic()
    await spawned.process.wait()
    wait_for(lambda: not any(alive(p) for p in tree), 5, 0.02)
    gone_after = time.monotonic() - killed
    assert gone_after < 2.0, f"the agent tree outlived its runner by {gone_after:.2f}s"
    assert find_live(project) == []  # found gone: marked interrupted on the way
    rec = record(project)
    assert rec["state"] == "interrupted"
    assert "last seen" in rec["reason"] and rec["lastSeen"]
    assert not live_path(project, "a").exists()
    assert not Path(live.socket).exists()  # its socket goes with it


def test_a_reused_pid_is_never_taken_for_a_runner(project: Path) -> None:
    # A live file naming a pid that runs (ours), but with another start time: a reused pid.
    run_dir = project / ".ralph" / "runs" / "r-20010101-000000-1abcde"
    run_dir.mkdir(parents=True)
    (run_dir / "record.json").write_text(
        json.dumps(
            {
                "runId": "r-20010101-000000-1abcde",
                "change": "a",
                "state": "running",
                "reason": "iteration 2",
            }
        )
    )
    write_live(
        LiveRun(
            pid=os.getpid(),
            pid_started_at="2001-01-01T00:00:00Z",
            run_id="r-20010101-000000-1abcde",
            change="a",
            root=project,
            socket="/nonexistent.sock",
            started_at="2001-01-01T00:00:00Z",
            last_seen="2001-01-01T00:05:00Z",
        )
    )
    assert find_live(project) == []
    rec = json.loads((run_dir / "record.json").read_text())
    assert rec["state"] == "interrupted"
    assert "last seen 2001-01-01T00:05:00Z" in rec["reason"]
    assert not live_path(project, "a").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a client as another user")
async def test_another_user_cannot_reach_the_control_socket(project: Path) -> None:
    spawned = await spawn(project, "a", settings(fake_settings("sleep_forever.py")))
    [live] = find_live(project)
    try:
        # The folder's mode keeps another user out ...
        assert _connect_as_nobody(live.socket) == "refused: PermissionError"
        # ... and with the folder opened up, the peer check still closes on them.
        folder = Path(live.socket).parent
        folder.chmod(0o711)
        folder.parent.chmod(0o711)  # the test's runtime folder
        os.chmod(live.socket, 0o777)
        assert _connect_as_nobody(live.socket) == "closed without a word"
    finally:
        Path(live.socket).parent.chmod(0o700)
        Path(live.socket).parent.parent.chmod(0o700)
        await request(live, {"type": "stop"})
        await spawned.process.wait()


def _connect_as_nobody(path: str) -> str:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: become nobody, try to talk to the runner
        os.close(read)
        try:
            os.setgid(65534)
            os.setuid(65534)
            sock = socket.socket(socket.AF_UNIX)
            sock.settimeout(5)
            try:
                sock.connect(path)
            except OSError as exc:
                out = f"refused: {type(exc).__name__}"
            else:
                try:
                    # The runner may hang up before the hello is even sent (broken pipe).
                    sock.sendall(b'{"type": "hello"}\n')
                    data = sock.recv(4096)
                except OSError as exc:
                    data = type(exc).__name__.encode()
                # closed, reset, or never answered (a loaded machine): told nothing either way
                told_nothing = data in (
                    b"",
                    b"BrokenPipeError",
                    b"ConnectionResetError",
                    b"TimeoutError",
                )
                out = "closed without a word" if told_nothing else f"got {data[:80]!r}"
            os.write(write, out.encode())
        except BaseException as exc:  # say what went wrong rather than nothing
            os.write(write, f"error in the child: {exc!r}".encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        return f.read()


async def test_a_slow_reader_loses_nothing_and_a_stalled_one_cannot_hold_the_run(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RALPH_STALL_SECONDS", "4")
    count = 150_000
    raw = fake_settings("flood.py", "lines", str(count), maxIterations=1)
    spawned = await spawn(project, "a", settings(raw))
    [live] = find_live(project)
    # A client that reads every line, but only after a pause: it gets every one, in order.
    lines: list[str] = []
    slow = Attachment(
        live,
        lambda e: lines.extend(e.text.split("\n")) if isinstance(e, LogEvent) else None,
    )
    # A client that never reads: dropped after the stall time, the run goes on.
    stalled = socket.socket(socket.AF_UNIX)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(live.socket)
    stalled.sendall(b'{"type": "hello"}\n')
    await slow.open()
    started = time.monotonic()
    assert await asyncio.wait_for(spawned.process.wait(), 90) == 0
    took = time.monotonic() - started
    await asyncio.wait_for(slow.closed, 30)
    stalled.close()
    flood = [line for line in lines if line.endswith(" of the flood")]
    assert flood == [f"line {i} of the flood" for i in range(count)]
    # Held back while the stalled client's buffer was full (nothing piled up in the runner),
    # then that client was dropped and the run went on.
    assert 3.5 <= took < 4 + 30, f"the run took {took:.1f}s with a stalled client"
    assert slow.final is not None and slow.final.state == "exhausted"


async def test_the_runner_imports_nothing_from_the_workspace(project: Path) -> None:
    # A project whose own files shadow the standard library or this package: never imported.
    marker = project / "imported"
    for name in ("json.py", "asyncio.py", "ralph_lsp/__init__.py", "ralph_lsp/runner/__init__.py"):
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(marker)!r}, 'a').write({name!r})\nraise SystemExit(9)\n")
    spawned = await spawn(project, "a", settings(demo_settings(0.01)))
    assert await asyncio.wait_for(spawned.process.wait(), 60) == 0
    assert not marker.exists(), marker.read_text()
    assert record(project)["state"] == "succeeded"


async def test_the_runner_reads_a_changes_metadata_and_shadows_nothing(project: Path) -> None:
    # A change as `openspec new change` writes it has an `.openspec.yaml`, read with PyYAML,
    # which lives in the interpreter's site-packages, which `python -S` leaves off the path
    # (every detached run of such a change failed: "No module named 'yaml'").
    (project / "openspec" / "changes" / "a" / ".openspec.yaml").write_text(
        "schema: spec-driven\ncreated: 2026-12-02\n", encoding="utf-8"
    )
    # and the site-packages come after the standard library: a `json` there shadows nothing
    marker = project / "imported"
    (project / "json.py").write_text(f"open({str(marker)!r}, 'a').write('json')\n")
    spawned = await spawn(project, "a", settings(demo_settings(0.01)))
    assert await asyncio.wait_for(spawned.process.wait(), 60) == 0
    got = record(project)
    assert got["state"] == "succeeded", got.get("reason")
    assert not marker.exists()
