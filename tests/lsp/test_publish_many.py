"""Publishing every change's diagnostics with thousands of changes: requests are answered
while it goes on, and no parsed document of a file that is not open is kept afterwards."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lsprotocol import types

from ralph_lsp.server import sweep
from ralph_lsp.server.diagnostics import DiagnosticsStore, Sent
from ralph_lsp.server.documents import DocumentStore
from ralph_lsp.server.event_source import EventSource
from ralph_lsp.server.publishing import Publisher
from tests.lsp.conftest import StartSession, wait_until

TASKS = "## 1. One\n\n- [ ] 1.1 a task\n- [] 1.2 an empty box (a warning)\n"


def make_changes(root: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        folder = root / "openspec" / "changes" / f"c{i:05d}"
        folder.mkdir(parents=True)
        (folder / "tasks.md").write_text(TASKS)
        paths.append(folder / "tasks.md")
    return paths


async def test_requests_are_answered_while_every_change_is_published(
    tmp_path: Path, start_session: StartSession
) -> None:
    count = 3000
    make_changes(tmp_path, count)
    s = await start_session(tmp_path)
    client = s.client
    # Sent right after initialized: with the publishing done in one go it would wait for all.
    await s.command("ralph.status", {})
    published_when_answered = len(client.diagnostics)
    await wait_until(lambda: len(client.diagnostics) >= count, timeout=60, what="every file")
    assert published_when_answered < count


class Stub:
    """The parts of the session a Publisher uses, and a store that sends to a list."""

    def __init__(self, root: Path) -> None:
        self.stopping = False
        self.docs = DocumentStore(lambda uri: None)
        self.position_encoding = types.PositionEncodingKind.Utf16
        self.roots = SimpleNamespace(roots=[root], open_change_paths=lambda: [])
        self.events = EventSource()
        self.sent: list[types.PublishDiagnosticsParams] = []
        self.tasks: list[asyncio.Task[Any]] = []
        self.store = DiagnosticsStore(Sent(self.sent.append), self.docs.uri_for, ["tasks"])

    def status_of(self, root: Path, change: str) -> None:
        return None

    def run_task(self, coro: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.append(task)
        return task

    def refresh_lenses(self) -> None:
        pass


def publisher_of(ls: Stub) -> Publisher:
    conformance = SimpleNamespace(lenses_of=lambda path: None)
    return Publisher(ls, ls.store, conformance)  # type: ignore[arg-type]


async def test_the_sweep_yields_and_keeps_no_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweep, "SLICE_SECONDS", 0.0)
    paths = make_changes(tmp_path, 200)
    ls = Stub(tmp_path)
    publisher = publisher_of(ls)
    publisher.publish_all()
    seen_meanwhile: list[int] = []

    async def meanwhile() -> None:
        seen_meanwhile.append(len(ls.sent))

    await asyncio.gather(meanwhile(), *ls.tasks)
    assert seen_meanwhile[0] < len(paths)
    assert sorted(p.uri for p in ls.sent) == sorted(p.as_uri() for p in paths)
    assert all(len(p.diagnostics) == 1 for p in ls.sent)
    assert ls.docs._disk_cache == {}  # nothing of 200 files that are not open is kept
    # Nothing changed: a second sweep sends nothing again.
    ls.sent.clear()
    publisher.publish_all()
    await asyncio.gather(*ls.tasks)
    assert ls.sent == []


async def test_a_new_sweep_replaces_one_going_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweep, "SLICE_SECONDS", 0.0)
    make_changes(tmp_path, 50)
    ls = Stub(tmp_path)
    publisher = publisher_of(ls)
    publisher.publish_all()
    await asyncio.sleep(0)
    publisher.publish_all()
    t0 = time.monotonic()
    await asyncio.gather(*ls.tasks, return_exceptions=True)
    assert ls.tasks[0].cancelled()
    assert len({p.uri for p in ls.sent}) == 50 == len(ls.sent)
    assert time.monotonic() - t0 < 10
