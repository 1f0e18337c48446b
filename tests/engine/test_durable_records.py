"""A run's record is made durable off the event loop (runs/durable.py): on a slow disk the
loop is not held while the record is saved, a reader in the process still sees every version
at once, only the newest of a burst reaches the disk, and a failure in the background is
raised by the file's next write. Real runs of a fake agent, real files; only ``os.fsync`` is
slowed (or failed), as a busy or full disk makes it."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import time
from pathlib import Path

import pytest

from ralph_lsp.loop.engine import Engine, EngineEvent, StatusEvent
from ralph_lsp.runs import durable
from ralph_lsp.runs.history import read_small_file
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import Settings
from tests.engine.conftest import CHANGE, fake

SLOW_FSYNC = 0.2  # seconds: a disk shared with busy neighbours


@pytest.fixture
def slow_fsync(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``os.fsync`` taking :data:`SLOW_FSYNC` more; the descriptors it was called on."""
    real, calls = os.fsync, []

    def fsync(fd: int) -> None:
        calls.append(fd)
        time.sleep(SLOW_FSYNC)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


async def test_a_slow_disk_does_not_hold_the_loop_while_a_run_saves_its_record(
    project: Path, slow_fsync: list[int]
) -> None:
    final = asyncio.Event()
    saves: list[tuple[str, int]] = []

    def on_event(event: EngineEvent) -> None:
        if isinstance(event, StatusEvent) and not final.is_set():
            saves.append((event.status.state, event.status.completed))
            if event.status.final:
                final.set()

    engine = Engine(on_event)
    settings = Settings(
        agent="custom", agent_command=tuple(fake("check_one.py")), verify_when="off"
    )
    lags: list[float] = []

    async def ticker() -> None:
        while not final.is_set():
            t0 = time.monotonic()
            await asyncio.sleep(0.005)
            if not final.is_set():  # the run's last save is on disk before its end is said
                lags.append(time.monotonic() - t0 - 0.005)

    await engine.start(project, CHANGE, settings, RunRequest())  # (its claim, written now)
    ticking = asyncio.create_task(ticker())
    status = await asyncio.wait_for(engine.wait(project, CHANGE), 60)
    await ticking
    assert status.state == "succeeded", status.reason
    # every save (each status update: 16 and more a run) used to wait for its fsync on the loop
    assert len(saves) >= 16, saves
    held = [lag for lag in lags if lag >= SLOW_FSYNC]  # (a loaded machine's pauses are fewer)
    assert len(held) <= 3, (held, len(saves))
    # the saves were made durable all the same: only the newest version of a burst is
    # flushed, so how many fsyncs a run takes depends on the disk's pace (7 and 8 are both
    # seen), and the record read below is the last version
    assert slow_fsync
    folder = project / ".ralph/runs" / status.run_id
    record = json.loads((folder / "record.json").read_text())
    assert record["state"] == "succeeded" and record["endedAt"]
    assert record["progress"]["completed"] == status.completed == 8
    assert [n for n in os.listdir(folder) if ".tmp-" in n] == []


def test_only_the_newest_of_a_burst_reaches_the_disk(tmp_path: Path, slow_fsync: list[int]) -> None:
    path = tmp_path / ".ralph" / "runs" / "r1" / "record.json"
    t0 = time.monotonic()
    for n in range(10):
        durable.write_later(path, lambda f, n=n: f.write(json.dumps({"n": n})))
        assert json.loads(read_small_file(path)) == {"n": n}  # a reader waits for its version
    written = time.monotonic() - t0
    for n in range(10, 40):
        durable.write_later(path, lambda f, n=n: f.write(json.dumps({"n": n})))
    durable.settle(path)
    assert json.loads(path.read_text()) == {"n": 39}
    assert os.listdir(path.parent) == ["record.json"]  # the superseded versions removed
    assert len(slow_fsync) < 20, len(slow_fsync)  # the 30 unread ones were mostly skipped
    assert written >= 10 * SLOW_FSYNC * 0.9  # (the read ones each waited for their fsync)


def test_a_failure_in_the_background_is_raised_by_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / ".ralph" / "runs" / "r1" / "record.json"
    durable.write_now(path, lambda f: f.write('{"n": 1}'))

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    durable.write_later(path, lambda f: f.write('{"n": 2}'))
    assert durable.settle_all()
    assert json.loads(path.read_text()) == {"n": 1}  # the previous version, whole
    assert os.listdir(path.parent) == ["record.json"]
    with pytest.raises(OSError) as raised:
        durable.write_later(path, lambda f: f.write('{"n": 3}'))
    assert raised.value.errno == errno.ENOSPC
    monkeypatch.undo()
    durable.write_later(path, lambda f: f.write('{"n": 4}'))
    durable.settle(path)
    assert json.loads(path.read_text()) == {"n": 4}
