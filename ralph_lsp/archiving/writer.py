"""An archive carried out all or nothing: specs through temporary files, then the folder moved,
nothing written or moved through a link (``folders.py``)."""

from __future__ import annotations

import contextlib
import datetime
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.archiving.folders import (
    open_folder,
    refusal,
    regular_mode,
    remove_folders,
    replace_file,
)
from ralph_lsp.openspec.archive_paths import ARCHIVE_PARTS, CHANGES_PARTS, spec_parts
from ralph_lsp.openspec.archive_plan import ArchiveBlocked, ArchivePlan, SpecWrite, plan_archive

__all__ = ["ArchiveBlocked", "ArchivePlan", "archive_change", "carry_out", "today"]


SPEC_FILE = "spec.md"


def today() -> str:
    """The local date as ``YYYY-MM-DD`` (what the CLI names an archive folder with)."""
    return datetime.date.today().isoformat()


@dataclass
class _Done:
    write: SpecWrite
    parts: tuple[str, ...]  # the spec's folder below the root
    mode: int | None  # the old file's permission bits (None: it was new)
    created: list[tuple[str, ...]]


def _write_one(root: Path, write: SpecWrite) -> _Done:
    """Write one rebuilt spec in its folder (made as needed), never through a link."""
    created: list[tuple[str, ...]] = []
    parts = spec_parts(write.spec_id)
    folder = open_folder(root, parts, created)
    try:
        mode = regular_mode(folder, SPEC_FILE, "/".join((*parts, SPEC_FILE)))
        replace_file(folder, SPEC_FILE, write.new, mode)
    except BaseException:
        remove_folders(root, created)
        raise
    finally:
        os.close(folder)  # not held: an archive of a thousand specs needs no thousand fds
    return _Done(write, parts, mode, created)


def _undo(root: Path, done: _Done) -> None:
    """Put one spec back as it was (its old bytes, or no file and no folders it made), its
    folder opened again without following a link."""
    folder = open_folder(root, done.parts)
    try:
        if done.write.old is not None:
            replace_file(folder, SPEC_FILE, done.write.old, done.mode)
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(SPEC_FILE, dir_fd=folder)
    finally:
        os.close(folder)
    remove_folders(root, done.created)


def _move(plan: ArchivePlan, created: list[tuple[str, ...]]) -> None:
    """Rename the change's folder into ``changes/archive/`` (made as needed), both folders
    opened without following a link and the change itself a real folder, not a link."""
    changes = open_folder(plan.root, CHANGES_PARTS)
    try:
        shown = "/".join((*CHANGES_PARTS, plan.change))
        if not stat.S_ISDIR(os.lstat(plan.change, dir_fd=changes).st_mode):
            raise refusal(changes, plan.change, shown)
        archive = open_folder(plan.root, ARCHIVE_PARTS, created)
        try:
            if _exists(archive, plan.archive_name):
                raise ArchiveBlocked(
                    "archive_target_exists", f"Archive '{plan.archive_name}' already exists."
                )
            os.rename(plan.change, plan.archive_name, src_dir_fd=changes, dst_dir_fd=archive)
        finally:
            os.close(archive)
    finally:
        os.close(changes)


def _exists(dfd: int, name: str) -> bool:
    try:
        os.lstat(name, dir_fd=dfd)
    except FileNotFoundError:
        return False
    return True


def carry_out(plan: ArchivePlan) -> None:
    """Write the plan's specs, then move the change into the archive; all or nothing.

    Every folder is opened without following a link (``folders.py``): a link found on the way
    is refused as :class:`ArchiveBlocked`. Raises that or :class:`OSError` (after rolling
    back) when any step fails; nothing is left changed.
    """
    if plan.archive_path.exists() or plan.archive_path.is_symlink():
        raise ArchiveBlocked(
            "archive_target_exists", f"Archive '{plan.archive_name}' already exists."
        )
    done: list[_Done] = []
    made_archive: list[tuple[str, ...]] = []
    try:
        for write in plan.writes:
            done.append(_write_one(plan.root, write))
        _move(plan, made_archive)
    except BaseException:
        for step in reversed(done):
            _undo(plan.root, step)
        remove_folders(plan.root, made_archive)
        raise


def archive_change(
    root: Path,
    change: str,
    *,
    yes: bool,
    skip_specs: bool = False,
    incomplete_tasks: int = 0,
    date: str | None = None,
) -> ArchivePlan:
    """Plan and carry out ``openspec archive CHANGE``; raises :class:`ArchiveBlocked` on refusal."""
    plan = plan_archive(
        root,
        change,
        date or today(),
        yes=yes,
        skip_specs=skip_specs,
        incomplete_tasks=incomplete_tasks,
    )
    carry_out(plan)
    return plan
