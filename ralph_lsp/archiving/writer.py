"""An archive carried out all or nothing: specs through temporary files, then the folder moved."""

from __future__ import annotations

import datetime
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.openspec.archive_plan import ArchiveBlocked, ArchivePlan, SpecWrite, plan_archive

__all__ = ["ArchiveBlocked", "ArchivePlan", "archive_change", "carry_out", "today"]


def today() -> str:
    """The local date as ``YYYY-MM-DD`` (what the CLI names an archive folder with)."""
    return datetime.date.today().isoformat()


@dataclass
class _Done:
    write: SpecWrite
    real: Path
    created_dirs: list[Path]


def _real_target(path: Path) -> Path:
    """Where a spec's bytes live: a symlinked ``spec.md`` is written through, as the CLI does."""
    return path.resolve() if path.is_symlink() else path


def _missing_dirs(folder: Path) -> list[Path]:
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    return missing


def _write_one(write: SpecWrite) -> _Done:
    real = _real_target(write.path)
    created = _missing_dirs(real.parent)
    real.parent.mkdir(parents=True, exist_ok=True)
    done = _Done(write, real, created)
    temp = real.with_name(f".{real.name}.ralph-archive-{secrets.token_hex(4)}")
    try:
        with open(temp, "xb") as handle:
            handle.write(write.new)
            handle.flush()
            os.fsync(handle.fileno())
        if real.exists():
            os.chmod(temp, real.stat().st_mode & 0o7777)
        os.replace(temp, real)
    except BaseException:
        temp.unlink(missing_ok=True)
        _undo(done)
        raise
    return done


def _undo(done: _Done) -> None:
    """Put one spec back as it was (its old bytes, or no file and no folders it made)."""
    if done.write.old is None:
        done.real.unlink(missing_ok=True)
        for folder in done.created_dirs:
            try:
                folder.rmdir()
            except OSError:
                break
        return
    temp = done.real.with_name(f".{done.real.name}.ralph-restore-{secrets.token_hex(4)}")
    temp.write_bytes(done.write.old)
    os.replace(temp, done.real)


def carry_out(plan: ArchivePlan) -> None:
    """Write the plan's specs, then move the change into the archive; all or nothing.

    Raises :class:`OSError` (after rolling back) when any step fails; nothing is left changed.
    """
    if plan.archive_path.exists():
        raise ArchiveBlocked(
            "archive_target_exists", f"Archive '{plan.archive_name}' already exists."
        )
    done: list[_Done] = []
    archive_dir = plan.archive_path.parent
    made_archive_dir = not archive_dir.exists()
    try:
        for write in plan.writes:
            done.append(_write_one(write))
        archive_dir.mkdir(parents=True, exist_ok=True)
        os.rename(plan.change_dir, plan.archive_path)
    except BaseException:
        for step in reversed(done):
            _undo(step)
        if made_archive_dir:
            try:
                archive_dir.rmdir()
            except OSError:
                pass
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
