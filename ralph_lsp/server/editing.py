"""The client's documents and the disk: opening, editing, saving and closing a tasks.md, and
files the agent changes on disk. Each event updates the document store and republishes. A test
file's buffer goes to the scenario lenses only (``conformance_view.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ralph_lsp.openspec.workspace import root_of_file
from ralph_lsp.server.roots import path_of

if TYPE_CHECKING:
    from ralph_lsp.server.host import Host


class Editing:
    def __init__(self, ls: Host) -> None:
        self.ls = ls

    def _shown(self, path: Path, *, saved: bool = True) -> None:
        self.ls.validation.touched([path], saved=saved)
        self.ls.publisher.publish(path)
        self.ls.publisher.refresh_lenses()

    def on_open(self, uri: str) -> None:
        path = path_of(uri)
        if path is None:
            return
        if self.ls.conformance.is_test_file(path):  # its links, from its buffer (SPEC §13)
            self.ls.conformance.buffer_changed(path, uri)
            return
        self.ls.docs.opened(path, uri)
        root = root_of_file(path)
        if root is not None:
            self.ls.roots.watch_also(root)
        self._shown(path)

    def on_edit(self, uri: str) -> None:
        path = path_of(uri)
        if path is not None and self.ls.conformance.is_test_file(path):
            self.ls.conformance.buffer_changed(path, uri)
        elif path is not None:
            self._shown(path, saved=False)  # the buffer changed, not the disk

    def on_save(self, uri: str) -> None:
        path = path_of(uri)
        if path is None or self.ls.conformance.is_test_file(path):  # the disk's watch has it
            return
        self.ls.docs.saved(path)  # the saved text holds no edits of its own: the disk wins again
        self._shown(path)

    def on_close(self, uri: str) -> None:
        path = path_of(uri)
        if path is None:
            return
        if self.ls.conformance.is_test_file(path):
            self.ls.conformance.buffer_closed(path)
            return
        self.ls.docs.closed(path)
        self._shown(path)  # the disk's version now

    def on_disk_change(self, paths: set[Path]) -> None:
        changed = False
        for path in paths:
            self.ls.docs.invalidate(path)
            if root_of_file(path) is not None:
                changed = True
                self.ls.publisher.publish(path)
        if changed:
            self.ls.publisher.refresh_lenses()
