"""The OpenSpec roots of the workspace (:class:`RootSet`): which they are, and the root a command
names (SPEC §4 v2: only roots inside the workspace folders). Watching them is ``roots.py``'s."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from ralph_lsp.openspec.workspace import CHANGES, find_roots, root_of_file
from ralph_lsp.server.args import path_of_uri
from ralph_lsp.server.documents import DocumentStore
from ralph_lsp.server.errors import InvalidArguments

Key = tuple[Path, str]  # (OpenSpec root, change name)


def path_of(uri: str) -> Path | None:
    """The resolved local path of a ``file:`` URI; None for any other scheme."""
    if not uri.startswith("file:"):
        return None
    fs = to_fs_path(uri)
    if not fs:
        return None
    try:
        return Path(fs).resolve()
    except (OSError, RuntimeError):
        return Path(fs)


def root_key(path: Path) -> Key:
    """(root, change) of a change's tasks.md."""
    root = root_of_file(path)
    assert root is not None
    return root, path.parent.name


class RootSet:
    """The roots found in the workspace folders (``roots``, set by ``roots.RootWatch``)."""

    def __init__(self, workspace: Callable[[], Workspace], docs: DocumentStore) -> None:
        self._workspace = workspace
        self._docs = docs
        self.roots: list[Path] = []

    def find(self) -> list[Path]:
        """The OpenSpec roots of the workspace folders (known from ``initialize`` on)."""
        ws = self._workspace()
        folders = [to_fs_path(f.uri) for f in ws.folders.values()]
        if not folders and ws.root_path:
            folders = [ws.root_path]
        return find_roots([Path(f) for f in folders if f])

    def open_change_paths(self) -> list[Path]:
        return [p for p in self._docs.open_paths() if root_of_file(p) is not None]

    def resolve(self, command: str, root: str | None) -> Path:
        """The root a command is about: the one given, or the only one open."""
        if root is None:
            if len(self.roots) == 1:
                return self.roots[0]
            if not self.roots:
                raise InvalidArguments(
                    f"{command}: no OpenSpec root is open (no workspace folder holds"
                    f' openspec/changes/); pass "root", the URI of the folder that does'
                )
            raise InvalidArguments(
                f"{command}: several OpenSpec roots are open ({self._listing()});"
                ' pass "root" to pick one'
            )
        path = path_of_uri(command, root)
        try:
            path = path.resolve()
        except (OSError, RuntimeError):
            pass
        if not (path / CHANGES).is_dir():
            raise InvalidArguments(
                f"{command}: {root} is not an OpenSpec root (it has no openspec/changes/ folder);"
                f" open roots: {self._listing() or 'none'}"
            )
        if not self._allowed(path):
            listing = self._listing() or "none"
            raise InvalidArguments(
                f"{command}: {root} is not in this editor's workspace folders; only the OpenSpec"
                f" roots of the open workspace can be used (open roots: {listing})"
            )
        return path

    def _listing(self) -> str:
        return ", ".join(r.as_uri() for r in self.roots)

    def _allowed(self, path: Path) -> bool:
        """A command may name one of the workspace's roots, or a root inside a workspace folder
        (with no folders at all, as for a lone file, the root of an open tasks.md)."""
        if path in self.roots:
            return True
        ws = self._workspace()
        folders = [Path(to_fs_path(f.uri) or "") for f in ws.folders.values()]
        folders = [f for f in folders if str(f) not in ("", ".")]
        if not folders and ws.root_path:
            folders = [Path(ws.root_path)]
        if folders:
            return any(_inside(path, folder) for folder in folders)
        return path in {root_key(p)[0] for p in self.open_change_paths()}


def _inside(path: Path, folder: Path) -> bool:
    try:
        folder = folder.resolve()
    except (OSError, RuntimeError):
        pass
    return path == folder or folder in path.parents
