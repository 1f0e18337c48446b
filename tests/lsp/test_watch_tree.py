"""A root's one watch of its ``openspec/`` tree: each folder watched once, its events routed to
the tasks interest and the spec interest, and a lost queue (inotify's overflow) answered by
telling both everything."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from ralph_lsp.server.watching import inotify
from ralph_lsp.server.watching.root import watch_root
from ralph_lsp.server.watching.tree import TreeWatcher
from tests.lsp.test_watch import TASKS, Seen, make_root

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux watch")


def project(tmp_path: Path) -> Path:
    root = make_root(tmp_path, "a", "b")
    spec = root / "openspec" / "specs" / "cap" / "spec.md"
    spec.parent.mkdir(parents=True)
    spec.write_text("# cap\n")
    delta = root / "openspec" / "changes" / "a" / "specs" / "cap" / "spec.md"
    delta.parent.mkdir(parents=True)
    delta.write_text("## ADDED Requirements\n")
    archived = root / "openspec" / "changes" / "archive" / "old"
    archived.mkdir(parents=True)
    (archived / "tasks.md").write_text(TASKS)
    (root / "openspec" / ".hidden").mkdir()
    return root


def start(root: Path) -> tuple[TreeWatcher, Seen, Seen]:
    tasks, specs = Seen(), Seen()
    w = watch_root(root, tasks, specs, lambda coro, name: asyncio.ensure_future(coro))
    return w, tasks, specs


async def stop(w: TreeWatcher) -> None:
    w.stop()
    await asyncio.wait_for(w.task, 5)


async def test_each_folder_is_watched_once_archive_and_hidden_ones_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RALPH_WATCH", raising=False)
    root = project(tmp_path)
    added: list[str] = []
    real_add = inotify.Inotify.add_watch

    def add_watch(ino: inotify.Inotify, path: str, mask: int) -> int:
        added.append(path)
        return real_add(ino, path, mask)

    monkeypatch.setattr(inotify.Inotify, "add_watch", add_watch)
    w, _, _ = start(root)
    try:
        spec = root / "openspec"
        assert sorted(added) == sorted(
            str(p)
            for p in [
                spec,
                spec / "changes",
                spec / "changes" / "a",
                spec / "changes" / "a" / "specs",
                spec / "changes" / "a" / "specs" / "cap",
                spec / "changes" / "b",
                spec / "specs",
                spec / "specs" / "cap",
            ]
        )
    finally:
        await stop(w)


async def test_events_go_to_the_interest_that_wants_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RALPH_WATCH", raising=False)
    root = project(tmp_path)
    w, tasks, specs = start(root)
    try:
        assert w.backend == "inotify"
        spec = root / "openspec" / "specs" / "cap" / "spec.md"
        spec.write_text("# cap\n\nmore\n")
        await specs.wait_for(spec)
        assert tasks.all() == set()
        md = root / "openspec" / "changes" / "b" / "tasks.md"
        md.write_text(TASKS + "\n")
        await tasks.wait_for(md)
        await specs.wait_for(md)  # validation reads tasks.md too
        # a new capability folder, made whole
        made = root / "openspec" / "specs" / "new"
        made.mkdir()
        (made / "spec.md").write_text("# new\n")
        await specs.wait_for(made / "spec.md")
        # archived changes are no one's
        (root / "openspec" / "changes" / "archive" / "old" / "tasks.md").write_text(TASKS)
        await asyncio.sleep(0.1)
        assert tasks.all() == set() and specs.all() == set()
    finally:
        await stop(w)


async def test_an_overflow_tells_each_interest_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RALPH_WATCH", raising=False)
    root = project(tmp_path)
    w, tasks, specs = start(root)
    try:
        later = root / "openspec" / "changes" / "c"
        ino = w._ino
        assert ino is not None
        real_read = ino.read

        def read() -> list[inotify.Event]:
            real_read()  # what the kernel still had: lost, as on a real overflow
            return [inotify.Event(-1, inotify.IN_Q_OVERFLOW, "")]

        monkeypatch.setattr(ino, "read", read)
        later.mkdir()
        (later / "tasks.md").write_text(TASKS)
        await tasks.wait_for(later / "tasks.md")
        monkeypatch.setattr(ino, "read", real_read)
        await specs.wait_for(later / "tasks.md")
        # the folder made while events were lost is watched now
        (later / "tasks.md").write_text(TASKS + "\n")
        await tasks.wait_for(later / "tasks.md")
    finally:
        await stop(w)


async def test_an_overflow_reports_every_file_of_each_interest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RALPH_WATCH", raising=False)
    root = project(tmp_path)
    w, tasks, specs = start(root)
    try:
        spec = root / "openspec"
        ino = w._ino
        assert ino is not None
        monkeypatch.setattr(ino, "read", lambda: [inotify.Event(-1, inotify.IN_Q_OVERFLOW, "")])
        w._on_readable()
        await asyncio.sleep(0.05)
        assert tasks.all() == {spec / "changes" / n / "tasks.md" for n in ("a", "b")}
        assert specs.all() == {
            spec / "changes" / "a" / "tasks.md",
            spec / "changes" / "b" / "tasks.md",
            spec / "changes" / "a" / "specs" / "cap" / "spec.md",
            spec / "specs" / "cap" / "spec.md",
        }
    finally:
        await stop(w)
