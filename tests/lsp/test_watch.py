"""The tasks.md watch (the tasks interest of a root's watch), on both of its backends, against
real file-system events."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from ralph_lsp.server.watching.root import watch_root
from ralph_lsp.server.watching.tree import TreeWatcher

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux watch")

TASKS = "## 1. One\n- [ ] 1.1 a\n"


class Seen:
    def __init__(self) -> None:
        self.batches: list[set[Path]] = []

    def __call__(self, paths: set[Path]) -> None:
        self.batches.append(set(paths))

    def all(self) -> set[Path]:
        return set().union(*self.batches) if self.batches else set()

    async def wait_for(self, path: Path, timeout: float = 5.0) -> float:
        """Seconds until ``path`` was reported (raises on timeout); clears what was seen."""
        t0 = time.monotonic()
        while path not in self.all():
            if time.monotonic() - t0 > timeout:
                raise AssertionError(f"{path} was not reported; saw {self.batches}")
            await asyncio.sleep(0.002)
        self.batches.clear()
        return time.monotonic() - t0


def root_watch(root: Path, seen: Callable[[set[Path]], None]) -> TreeWatcher:
    """A root's watch, its tasks.md changes to ``seen`` (its spec files' to nobody)."""
    return watch_root(
        root, seen, lambda paths: None, lambda coro, name: asyncio.ensure_future(coro)
    )


def make_root(tmp_path: Path, *changes: str) -> Path:
    root = tmp_path / "project"
    for name in changes:
        folder = root / "openspec" / "changes" / name
        folder.mkdir(parents=True)
        (folder / "tasks.md").write_text(TASKS)
    (root / "openspec" / "changes").mkdir(parents=True, exist_ok=True)
    return root


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(params=["inotify", "watchfiles"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "watchfiles":
        monkeypatch.setenv("RALPH_WATCH", "poll")
    return str(request.param)


WatchFactory = Callable[[Path], tuple[TreeWatcher, Seen]]


@pytest.fixture
async def watch(backend: str) -> AsyncIterator[WatchFactory]:
    made: list[TreeWatcher] = []

    def start(root: Path) -> tuple[TreeWatcher, Seen]:
        seen = Seen()
        w = root_watch(root, seen)
        assert w.backend == backend
        made.append(w)
        return w, seen

    yield start
    for w in made:
        w.stop()
        await asyncio.wait_for(w.task, 5)


async def settle(backend: str) -> None:
    # watchfiles says nothing of when its watch is in place (the watcher's own settle check
    # covers that); inotify is in place when the watcher is made.
    if backend == "watchfiles":
        await asyncio.sleep(0.5)


async def test_plain_and_atomic_saves_are_reported(
    tmp_path: Path, watch: WatchFactory, backend: str
) -> None:
    root = make_root(tmp_path, "a", "b")
    _, seen = watch(root)
    await settle(backend)
    tasks = root / "openspec" / "changes" / "a" / "tasks.md"
    for i in range(5):
        tasks.write_text(TASKS.replace("[ ]", "[x]" if i % 2 else "[ ]") + f"<!-- {i} -->\n")
        await seen.wait_for(tasks)
        tmp = tasks.with_name(f".tasks.md.{i}.tmp")
        tmp.write_text(TASKS + f"<!-- atomic {i} -->\n")
        os.replace(tmp, tasks)
        await seen.wait_for(tasks)
    other = root / "openspec" / "changes" / "b" / "tasks.md"
    assert other not in seen.all()


async def test_inotify_hands_over_a_save_at_once(tmp_path: Path) -> None:
    root = make_root(tmp_path, "a")
    seen = Seen()
    w = root_watch(root, seen)
    assert w.backend == "inotify"
    tasks = root / "openspec" / "changes" / "a" / "tasks.md"
    delays = []
    try:
        for i in range(20):
            tasks.write_text(TASKS + f"<!-- {i} -->\n")
            delays.append(await seen.wait_for(tasks))
    finally:
        w.stop()
    # A complete save (closed after writing) is not held back for more events: well under
    # the 20 ms that events of unfinished saves wait. Generous for a loaded machine.
    assert sorted(delays)[len(delays) // 2] < 0.015, delays


async def test_other_files_are_not_reported(
    tmp_path: Path, watch: WatchFactory, backend: str
) -> None:
    root = make_root(tmp_path, "a")
    _, seen = watch(root)
    await settle(backend)
    folder = root / "openspec" / "changes" / "a"
    (folder / "proposal.md").write_text("# Why\n")
    (folder / "notes").mkdir()
    (folder / "notes" / "tasks.md").write_text(TASKS)  # not a change's tasks.md
    await asyncio.sleep(0.3)
    tasks = folder / "tasks.md"
    tasks.write_text(TASKS + "\n")
    await seen.wait_for(tasks)
    assert seen.all() <= {tasks}


async def test_new_renamed_and_removed_changes(
    tmp_path: Path, watch: WatchFactory, backend: str
) -> None:
    root = make_root(tmp_path, "a")
    _, seen = watch(root)
    await settle(backend)
    changes = root / "openspec" / "changes"
    # A new change, its tasks.md written right after the folder is made.
    (changes / "new").mkdir()
    (changes / "new" / "tasks.md").write_text(TASKS)
    await seen.wait_for(changes / "new" / "tasks.md")
    # Edits in the new change are seen too (its folder is watched now).
    await asyncio.sleep(0.05)
    (changes / "new" / "tasks.md").write_text(TASKS + "\n")
    await seen.wait_for(changes / "new" / "tasks.md")
    # A change made elsewhere and moved in whole.
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "tasks.md").write_text(TASKS)
    staging.rename(changes / "moved-in")
    await seen.wait_for(changes / "moved-in" / "tasks.md")
    # Renamed: both names are reported, and the new name is watched.
    (changes / "new").rename(changes / "renamed")
    await seen.wait_for(changes / "renamed" / "tasks.md")
    await asyncio.sleep(0.05)
    (changes / "renamed" / "tasks.md").write_text(TASKS + "\n\n")
    await seen.wait_for(changes / "renamed" / "tasks.md")
    # Removed.
    shutil.rmtree(changes / "a")
    await seen.wait_for(changes / "a" / "tasks.md")
    # A vim-style save: the old file renamed away, a new one written.
    tasks = changes / "renamed" / "tasks.md"
    tasks.rename(tasks.with_name("tasks.md~"))
    tasks.write_text(TASKS + "<!-- new -->\n")
    await seen.wait_for(tasks)


async def test_the_changes_folder_removed_and_made_again(
    tmp_path: Path, watch: WatchFactory, backend: str
) -> None:
    root = make_root(tmp_path, "a")
    _, seen = watch(root)
    await settle(backend)
    changes = root / "openspec" / "changes"
    shutil.rmtree(changes)
    await asyncio.sleep(0.2)
    (changes / "b").mkdir(parents=True)
    (changes / "b" / "tasks.md").write_text(TASKS)
    await seen.wait_for(changes / "b" / "tasks.md")
    await asyncio.sleep(0.6 if backend == "watchfiles" else 0.05)
    (changes / "b" / "tasks.md").write_text(TASKS + "\n")
    await seen.wait_for(changes / "b" / "tasks.md")


async def test_a_root_without_changes_folder_is_watched_once_it_appears(
    tmp_path: Path, watch: WatchFactory
) -> None:
    root = tmp_path / "project"
    (root / "openspec").mkdir(parents=True)
    _, seen = watch(root)
    await asyncio.sleep(0.1)
    (root / "openspec" / "changes" / "a").mkdir(parents=True)
    (root / "openspec" / "changes" / "a" / "tasks.md").write_text(TASKS)
    await seen.wait_for(root / "openspec" / "changes" / "a" / "tasks.md")


async def test_stop_releases_the_watch(tmp_path: Path, backend: str) -> None:
    root = make_root(tmp_path, "a")
    before = open_fds()
    seen = Seen()
    w = root_watch(root, seen)
    await asyncio.sleep(0.1)
    w.stop()
    await asyncio.wait_for(w.task, 5)
    await asyncio.sleep(0.05)
    (root / "openspec" / "changes" / "a" / "tasks.md").write_text(TASKS + "\n")
    await asyncio.sleep(0.1)
    assert seen.batches == []
    assert open_fds() <= before
