"""The OpenSpec roots watched (:class:`RootWatch`): found again when the workspace folders change,
each root's ``openspec/`` tree watched once (``watching/root.py``), its changes told as
:class:`~ralph_lsp.server.event_source.TasksChanged` and
:class:`~ralph_lsp.server.event_source.SpecsChanged`. Which roots there are, and the root a command
names, is the session's (``root_set.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ralph_lsp.server.event_source import SpecsChanged, TasksChanged
from ralph_lsp.server.publishing import Publisher
from ralph_lsp.server.root_set import root_key
from ralph_lsp.server.session import Session
from ralph_lsp.server.validation import Validation
from ralph_lsp.server.watching.root import watch_root
from ralph_lsp.server.watching.tree import TreeWatcher


class RootWatch:
    def __init__(self, session: Session, publisher: Publisher, validation: Validation) -> None:
        self.session = session
        self.publisher = publisher
        self.validation = validation
        self._watchers: dict[Path, TreeWatcher] = {}

    def update(self) -> None:
        """The workspace folders changed (or were first known): find the roots, watch them."""
        roots = self.session.roots
        roots.roots = roots.find()
        self.watch(roots.roots + [root_key(p)[0] for p in roots.open_change_paths()])
        self.publisher.publish_all()
        self.validation.refresh_all()

    def watch(self, roots: Sequence[Path]) -> None:
        wanted = set(roots)
        self.validation.watch(wanted)
        for root in list(self._watchers):
            if root not in wanted:
                self._watchers.pop(root).stop()
        for root in wanted:
            if root not in self._watchers:
                self._watchers[root] = watch_root(
                    root, self._tasks_changed, self._specs_changed, self.session.run_task
                )

    def _tasks_changed(self, paths: set[Path]) -> None:
        self.session.events.emit(TasksChanged(frozenset(paths)))

    def _specs_changed(self, paths: set[Path]) -> None:
        self.session.events.emit(SpecsChanged(frozenset(paths)))

    def watch_also(self, root: Path) -> None:
        if root not in self._watchers:
            self.watch([*self._watchers, root])

    def stop_watching(self) -> None:
        self.validation.stop()
        for watcher in self._watchers.values():
            watcher.stop()
