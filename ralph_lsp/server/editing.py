"""The client's documents and the disk: opening, editing, saving and closing a tasks.md, and
files the agent changes on disk (:class:`~ralph_lsp.server.event_source.TasksChanged`). Each event
updates the document store and republishes. A test file's buffer goes to the scenario lenses
only (``conformance_view.py``)."""

from __future__ import annotations

from pathlib import Path

from ralph_lsp.openspec.workspace import root_of_file
from ralph_lsp.server.conformance_view import ConformanceView
from ralph_lsp.server.event_source import TasksChanged
from ralph_lsp.server.publishing import Publisher
from ralph_lsp.server.root_set import path_of
from ralph_lsp.server.roots import RootWatch
from ralph_lsp.server.session import Session
from ralph_lsp.server.validation import Validation


class Editing:
    def __init__(
        self,
        session: Session,
        watch: RootWatch,
        publisher: Publisher,
        validation: Validation,
        conformance: ConformanceView,
    ) -> None:
        self.docs = session.docs
        self.session = session
        self.watch = watch
        self.publisher = publisher
        self.validation = validation
        self.conformance = conformance
        session.events.on(TasksChanged, lambda event: self.on_disk_change(event.paths))

    def _shown(self, path: Path, *, saved: bool = True) -> None:
        self.validation.touched([path], saved=saved)
        self.publisher.publish(path)
        self.session.refresh_lenses()

    def on_open(self, uri: str) -> None:
        path = path_of(uri)
        if path is None:
            return
        if self.conformance.is_test_file(path):  # its links, from its buffer (SPEC §13)
            self.conformance.buffer_changed(path, uri)
            return
        self.docs.opened(path, uri)
        root = root_of_file(path)
        if root is not None:
            self.watch.watch_also(root)
        self._shown(path)

    def on_edit(self, uri: str) -> None:
        path = path_of(uri)
        if path is not None and self.conformance.is_test_file(path):
            self.conformance.buffer_changed(path, uri)
        elif path is not None:
            self._shown(path, saved=False)  # the buffer changed, not the disk

    def on_save(self, uri: str) -> None:
        path = path_of(uri)
        if path is None or self.conformance.is_test_file(path):  # the disk's watch has it
            return
        self.docs.saved(path)  # the saved text holds no edits of its own: the disk wins again
        self._shown(path)

    def on_close(self, uri: str) -> None:
        path = path_of(uri)
        if path is None:
            return
        if self.conformance.is_test_file(path):
            self.conformance.buffer_closed(path)
            return
        self.docs.closed(path)
        self._shown(path)  # the disk's version now

    def on_disk_change(self, paths: frozenset[Path]) -> None:
        changed = False
        for path in paths:
            self.docs.invalidate(path)
            if root_of_file(path) is not None:
                changed = True
                self.publisher.publish(path)
        if changed:
            self.session.refresh_lenses()
