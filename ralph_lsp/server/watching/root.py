"""One root's watch: its ``openspec/`` tree, for tasks.md edits and for validation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ralph_lsp.server.watching.interests import openspec_skip, spec_interest, tasks_interest
from ralph_lsp.server.watching.tree import TreeWatcher
from ralph_lsp.server.watching.watched import RunTask


def watch_root(
    root: Path,
    on_tasks: Callable[[set[Path]], None],
    on_specs: Callable[[set[Path]], None],
    run_task: RunTask,
) -> TreeWatcher:
    """Watch ``root/openspec``: ``on_tasks`` gets the changes' task files that changed on disk
    (at once when a save is complete), ``on_specs`` the files OpenSpec validation reads (in
    batches). In place when this returns, where inotify can be had."""
    interests = [tasks_interest(root, on_tasks), spec_interest(root, on_specs)]
    return TreeWatcher(root / "openspec", interests, run_task, skip=openspec_skip(root))
