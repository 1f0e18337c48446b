"""OpenSpec roots and their active changes (SPEC §2). No LSP imports."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from urllib.parse import quote_from_bytes

from ralph_lsp.openspec.task_files import task_files
from ralph_lsp.openspec.tasks import TasksDoc, read_tasks_text
from ralph_lsp.openspec.tasks_fast import TasksSummary, parse_tasks

CHANGES = Path("openspec") / "changes"
ARCHIVE = "archive"


class UnknownChangeError(LookupError):
    """A change name that is not an active change of the root."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        listing = ", ".join(known) if known else "none"
        super().__init__(f"unknown change {name!r} (known: {listing})")


def find_root(start: Path) -> Path | None:
    """The nearest folder, from ``start`` up, that holds ``openspec/changes/`` (as the CLI does)."""
    try:
        here = start.resolve()
    except OSError:
        return None
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        if (folder / CHANGES).is_dir():
            return folder
    return None


def find_roots(folders: list[Path]) -> list[Path]:
    """The OpenSpec roots of several workspace folders, each once, in order."""
    roots: list[Path] = []
    for folder in folders:
        root = find_root(folder)
        if root is not None and root not in roots:
            roots.append(root)
    return roots


def root_of_file(path: Path) -> Path | None:
    """The OpenSpec root a change's task file (``…/openspec/changes/<name>/tasks.md``, or the
    file its schema tracks) belongs to, if it is one."""
    parts = path.parts
    if len(parts) < 5 or parts[-4:-2] != ("openspec", "changes") or parts[-2] == ARCHIVE:
        return None
    root = Path(*parts[:-4])
    if parts[-1] == "tasks.md" or path in task_files(root, path.parent):
        return root
    return None


def list_changes(root: Path) -> list[str]:
    """Active change names, sorted: every real sub-folder of openspec/changes/ but ``archive``.

    Like ``openspec list``, hidden folders count and symbolic links do not.
    """
    try:
        entries = list(os.scandir(root / CHANGES))
    except OSError:
        return []
    names = [e.name for e in entries if e.name != ARCHIVE and e.is_dir(follow_symlinks=False)]
    return sorted(names)


@dataclass(frozen=True)
class Change:
    root: Path
    name: str

    @property
    def folder(self) -> Path:
        return self.root / CHANGES / self.name

    @property
    def tasks_path(self) -> Path:
        """The change's task file: the first its schema tracks (``apply.tracks``), else tasks.md."""
        return self.task_files[0]

    @cached_property
    def task_files(self) -> list[Path]:
        """Every task file its schema tracks (one unless ``apply.tracks`` is a glob), as found
        when first asked (a Change is a moment's view: make a new one to look again)."""
        return task_files(self.root, self.folder)

    def read_doc(self) -> TasksDoc:
        """Parse tasks.md from disk; a missing file is 0/0 tasks. Raises OSError if unreadable."""
        text = read_tasks_text(self.tasks_path)
        return parse_tasks(text or "")

    def incomplete_tasks(self) -> int:
        """Unchecked tasks over all its task files (its schema's), as the CLI counts them before
        archiving; an unreadable file counts none."""
        missing = 0
        for path in self.task_files:
            try:
                doc = parse_tasks(read_tasks_text(path) or "")
            except OSError:
                continue
            missing += max(doc.total - doc.completed, 0)
        return missing


def resolve_change(root: Path, name: str) -> Change:
    """The active change ``name`` of ``root``; a name is never a path (``../x`` is unknown)."""
    known = list_changes(root)
    if name not in known:
        raise UnknownChangeError(name, known)
    return Change(root=root, name=name)


@lru_cache(maxsize=64)
def _root_uri(root: Path) -> str:
    return root.as_uri()


def tasks_uri(change: Change) -> str:
    """``change.tasks_path.as_uri()``, without building the path: a listing makes thousands."""
    base = _root_uri(change.root)
    if base.endswith("/"):  # the file system's root
        base = base[:-1]
    # The task file's path below the change's folder, which it was built from (string work: a
    # listing of thousands of changes pays for every Path made).
    folder = os.path.join(change.root, CHANGES, change.name) + os.sep
    name = str(change.tasks_path).removeprefix(folder).replace(os.sep, "/")
    return base + quote_from_bytes(os.fsencode(f"/openspec/changes/{change.name}/{name}"))


def change_json(
    change: Change, doc: TasksDoc | TasksSummary, run: dict[str, object] | None
) -> dict[str, object]:
    """One entry of the ``ralph.changes`` result (SPEC §5)."""
    return {
        "name": change.name,
        "root": _root_uri(change.root),
        "tasksUri": tasks_uri(change),
        "completed": doc.completed,
        "total": doc.total,
        "stories": [
            {
                "id": s.id,
                "title": s.title,
                "line": s.line,
                "completed": s.completed,
                "total": s.total,
            }
            for s in doc.stories
        ],
        "run": run,
    }
