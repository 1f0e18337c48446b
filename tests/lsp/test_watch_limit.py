"""The inotify watch limit (fs.inotify.max_user_watches) met: edits are still seen, and the
log says how many folders a root's watch has with inotify and how many it polls. The limit is
simulated by making inotify_add_watch fail with ENOSPC after a number of watches, as the kernel
does."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ralph_lsp.server.watching import inotify, polling
from ralph_lsp.server.watching.tree import TreeWatcher
from tests.lsp.test_watch import TASKS, Seen, make_root, root_watch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux watch")


class Limit:
    """Lets ``allowed`` watches be added (per instance, like the kernel's count); then ENOSPC."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, allowed: int) -> None:
        self.allowed = allowed
        self.used: dict[int, set[int]] = {}
        real_add = inotify.Inotify.add_watch
        real_rm = inotify.Inotify.rm_watch
        limit = self

        def add_watch(ino: inotify.Inotify, path: str, mask: int) -> int:
            mine = limit.used.setdefault(id(ino), set())
            if len(mine) >= limit.allowed:
                raise OSError(errno.ENOSPC, "inotify_add_watch: No space left on device", path)
            wd = real_add(ino, path, mask)
            mine.add(wd)
            return wd

        def rm_watch(ino: inotify.Inotify, wd: int) -> None:
            limit.used.get(id(ino), set()).discard(wd)
            real_rm(ino, wd)

        monkeypatch.setattr(inotify.Inotify, "add_watch", add_watch)
        monkeypatch.setattr(inotify.Inotify, "rm_watch", rm_watch)


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("RALPH_WATCH", raising=False)
    monkeypatch.setattr(polling, "POLL_SECONDS", 0.05)
    monkeypatch.setattr(polling, "REWATCH_SECONDS", 0.2)
    yield


def start(root: Path) -> tuple[TreeWatcher, Seen]:
    seen = Seen()
    return root_watch(root, seen), seen


async def stop(w: TreeWatcher) -> None:
    w.stop()
    await asyncio.wait_for(w.task, 5)


async def edit_each(root: Path, names: list[str], seen: Seen, tag: str) -> None:
    for name in names:
        tasks = root / "openspec" / "changes" / name / "tasks.md"
        tmp = tasks.with_name(".tasks.md.tmp")
        tmp.write_text(TASKS + f"<!-- {tag} -->\n")
        os.replace(tmp, tasks)  # an atomic save: a new inode
        await seen.wait_for(tasks, timeout=3)


async def test_change_folders_past_the_limit_are_polled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    names = [f"c{i}" for i in range(6)]
    root = make_root(tmp_path, *names)
    Limit(monkeypatch, allowed=4)  # openspec/, changes/ and two change folders
    with caplog.at_level(logging.WARNING, logger="ralph_lsp.server.watching"):
        w, seen = start(root)
    try:
        assert w.backend == "inotify+polling"
        assert w.polled_count == 4
        said = [r.getMessage() for r in caplog.records if "watch limit" in r.getMessage()]
        assert len(said) == 1, caplog.text
        assert "4 folder(s) watched with inotify, 4 polled" in said[0]
        # every change's edits are seen, watched or polled
        await edit_each(root, names, seen, "one")
        # a change made now is seen, and so are its edits (polled: no watch is left)
        new = root / "openspec" / "changes" / "new"
        new.mkdir()
        (new / "tasks.md").write_text(TASKS)
        await seen.wait_for(new / "tasks.md", timeout=3)
        await edit_each(root, ["new"], seen, "two")
        assert w.polled_count == 5
    finally:
        await stop(w)


async def test_folders_move_back_to_inotify_when_watches_are_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ["a", "b", "c"]
    root = make_root(tmp_path, *names)
    limit = Limit(monkeypatch, allowed=3)  # openspec/, changes/ and one change folder
    w, seen = start(root)
    try:
        assert w.polled_count == 2
        limit.allowed = 100
        deadline = asyncio.get_running_loop().time() + 3
        while w.polled_count and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        assert w.polled_count == 0
        assert w.backend == "inotify"
        await edit_each(root, names, seen, "back")
    finally:
        await stop(w)


async def test_no_watch_at_all_still_sees_edits_and_new_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = make_root(tmp_path, "a", "b")
    Limit(monkeypatch, allowed=0)  # not even openspec/ gets a watch
    with caplog.at_level(logging.WARNING, logger="ralph_lsp.server.watching"):
        w, seen = start(root)
    try:
        assert w.backend == "inotify+polling"
        assert w.polled_count == 4  # openspec/, changes/, a/ and b/
        assert "0 folder(s) watched with inotify, 4 polled" in caplog.text
        assert "openspec/ itself among them" in caplog.text
        await edit_each(root, ["a", "b"], seen, "x")
        changes = root / "openspec" / "changes"
        (changes / "c").mkdir()
        (changes / "c" / "tasks.md").write_text(TASKS)
        await seen.wait_for(changes / "c" / "tasks.md", timeout=3)
        (changes / "a" / "tasks.md").unlink()
        (changes / "a").rmdir()
        await seen.wait_for(changes / "a" / "tasks.md", timeout=3)
        await edit_each(root, ["c"], seen, "y")
    finally:
        await stop(w)


async def test_no_watch_at_all_and_no_change_yet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_root(tmp_path)  # changes/ is empty: nothing to poll but the listing
    Limit(monkeypatch, allowed=0)
    w, seen = start(root)
    try:
        changes = root / "openspec" / "changes"
        (changes / "first").mkdir()
        (changes / "first" / "tasks.md").write_text(TASKS)
        await seen.wait_for(changes / "first" / "tasks.md", timeout=3)
    finally:
        await stop(w)


async def test_an_unlimited_watch_polls_nothing(tmp_path: Path) -> None:
    root = make_root(tmp_path, "a", "b")
    w, seen = start(root)
    try:
        assert w.backend == "inotify" and w.polled_count == 0
        await edit_each(root, ["a"], seen, "z")
    finally:
        await stop(w)
