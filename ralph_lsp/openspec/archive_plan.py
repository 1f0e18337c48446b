"""What ``openspec archive CHANGE --yes`` would do, decided without writing (SPEC §11).

:func:`plan_archive` follows the CLI 1.13.2's archive command up to its first write: the change's
name and folder, archive's delta-spec validation, the task check (``--yes`` passes it), the
archive folder's name (``YYYY-MM-DD-<name>``, or the name itself when it starts with a date) and
that it is free, then every delta spec applied in memory (``spec_apply``) and every rebuilt spec
validated. It returns an :class:`ArchivePlan` (the bytes to write, the folder to move) or raises
:class:`ArchiveBlocked` with the CLI's blocker code, message and fix. ``archiving/`` carries a plan
out; the preview in the editor shows one.

Pure but for reading files: today's date comes from the caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph_lsp.openspec.archive_checks import (
    MAX_SPEC_BYTES,
    delta_spec_errors,
    discover_spec_files,
    find_unread_delta_files,
    read_spec_text,
    spec_content_errors,
)
from ralph_lsp.openspec.archive_paths import (
    ARCHIVE_PARTS,
    CHANGES_PARTS,
    SPECS_PARTS,
    path_refusal,
    refusal_code,
    spec_parts,
)
from ralph_lsp.openspec.regular_files import NotARegularFile, read_regular
from ralph_lsp.openspec.spec_apply import Counts, SpecUpdateError, build_updated_spec

ARCHIVE_DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}-")
_ANY_DELTA = re.compile(r"^##\s+(ADDED|MODIFIED|REMOVED|RENAMED)\s+Requirements", re.I | re.M)


class ArchiveBlocked(Exception):
    """Archive refused, with the CLI's ``--json`` diagnostic (``code``, ``message``, ``fix``)."""

    def __init__(self, code: str, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fix = fix

    def diagnostic(self) -> dict[str, Any]:
        out: dict[str, Any] = {"severity": "error", "code": self.code, "message": self.message}
        if self.fix:
            out["fix"] = self.fix
        return out


@dataclass(frozen=True)
class SpecWrite:
    """One main spec to write: its id, path, bytes before (None: new) and after."""

    spec_id: str
    path: Path
    old: bytes | None
    new: bytes


@dataclass
class ArchivePlan:
    """Everything an archive writes: the specs, then the change's folder moved."""

    change: str
    change_dir: Path
    archive_name: str
    archive_path: Path
    writes: list[SpecWrite] = field(default_factory=list)
    totals: Counts | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def root(self) -> Path:
        """The project's root (``change_dir`` is ``<root>/openspec/changes/<name>``)."""
        return self.change_dir.parent.parent.parent

    def result_json(self) -> dict[str, Any]:
        """The ``archive`` object of ``openspec archive --json`` once this plan is carried out."""
        out: dict[str, Any] = {
            "change": self.change,
            "archivedAs": self.archive_name,
            "path": str(self.archive_path),
            "specsUpdated": bool(self.writes),
        }
        if self.totals is not None:
            t = self.totals
            out["totals"] = {
                "added": t.added,
                "modified": t.modified,
                "removed": t.removed,
                "renamed": t.renamed,
            }
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def archive_name_for(change: str, today: str) -> str:
    """``<today>-<change>``, or ``change`` when it already starts with a ``YYYY-MM-DD-`` date."""
    return change if ARCHIVE_DATE_PREFIX.match(change) else f"{today}-{change}"


def _check_name(change: str) -> None:
    problem = None
    if not change:
        problem = "Change name must not be empty"
    elif change in (".", ".."):
        problem = f"Change name must not be '{change}'"
    elif "/" in change or "\\" in change:
        problem = "Change name must not contain path separators"
    if problem:
        raise ArchiveBlocked("archive_change_name_invalid", problem)


def refuse_links(root: Path, parts: tuple[str, ...], *, last_is_file: bool = False) -> None:
    """Raise ``archive_path_symlink`` when a component of ``root/parts`` is a link
    (``archive_path_not_a_folder`` when a file is where a folder must be): archive writes
    nothing through links, and refuses before its first write (``openspec/archive_paths.py``)."""
    problem = path_refusal(root, parts, last_is_file=last_is_file)
    if problem:
        raise ArchiveBlocked(
            refusal_code(problem),
            f"{problem}. No files were changed.",
            "Replace the link (or the file in the way) with a real folder or file inside the"
            " project, then archive again.",
        )


def _find_change(changes_dir: Path, change: str) -> Path:
    change_dir = changes_dir / change
    if change_dir.is_symlink():
        raise ArchiveBlocked(
            "archive_change_symlink",
            f"Change '{change}' is a symbolic link. Replace it with a real directory before "
            "archiving.",
        )
    if not change_dir.is_dir():
        try:
            names = sorted(
                e.name for e in changes_dir.iterdir() if e.is_dir() and e.name != "archive"
            )
        except OSError:
            names = []
        listing = (
            f"Available changes: {', '.join(names)}"
            if names
            else "No active changes exist in this root."
        )
        raise ArchiveBlocked(
            "archive_change_not_found",
            f"Change '{change}' not found. {listing}".replace(". Available", ". Available"),
        )
    return change_dir


def _has_delta_specs(change_dir: Path) -> bool:
    specs = change_dir / "specs"
    if (specs / "spec.md").is_file() or find_unread_delta_files(specs):
        return True
    for _spec_id, path in discover_spec_files(specs):
        try:
            if _ANY_DELTA.search(read_spec_text(path)):
                return True
        except NotARegularFile:
            raise  # refused, not taken for a change without deltas
        except OSError:
            continue
    return False


def _match_line_ending(text: str, previous: str | None) -> str:
    if previous is None:
        return text
    crlf = previous.count("\r\n")
    lf = previous.count("\n") - crlf
    if crlf == 0 and lf == 0:
        return text
    normalized = text.replace("\r\n", "\n")
    return normalized.replace("\n", "\r\n") if crlf >= lf else normalized


def plan_archive(
    root: Path,
    change: str,
    today: str,
    *,
    yes: bool,
    skip_specs: bool = False,
    incomplete_tasks: int = 0,
) -> ArchivePlan:
    """Decide an archive as the CLI does (``--json`` mode); raises :class:`ArchiveBlocked`.

    Every spec is read by the regular-file rule: a delta or main spec that is a FIFO, a device
    or over ``MAX_SPEC_BYTES`` is refused as ``archive_spec_unreadable``, never read whole."""
    try:
        return _plan(root, change, today, yes, skip_specs, incomplete_tasks)
    except NotARegularFile as exc:
        raise ArchiveBlocked(
            "archive_spec_unreadable",
            f"{exc}. No files were changed.",
            "Make the spec a regular file under the size cap, then archive again.",
        ) from None


def _plan(
    root: Path, change: str, today: str, yes: bool, skip_specs: bool, incomplete_tasks: int
) -> ArchivePlan:
    changes_dir = root.joinpath(*CHANGES_PARTS)
    _check_name(change)
    refuse_links(root, CHANGES_PARTS)
    change_dir = _find_change(changes_dir, change)
    if _has_delta_specs(change_dir) and delta_spec_errors(change_dir) > 0:
        raise ArchiveBlocked(
            "archive_validation_failed",
            f"Validation failed for change '{change}'.",
            f"Run openspec validate {change} for details, fix the errors, or rerun with "
            "--no-validate.",
        )
    if incomplete_tasks > 0 and not yes:
        raise ArchiveBlocked(
            "archive_tasks_incomplete",
            f"{incomplete_tasks} incomplete task(s) found for change '{change}'.",
            "Complete the tasks or rerun with --yes.",
        )
    name = archive_name_for(change, today)
    plan = ArchivePlan(change, change_dir, name, root.joinpath(*ARCHIVE_PARTS, name))
    refuse_links(root, ARCHIVE_PARTS)
    if plan.archive_path.exists() or plan.archive_path.is_symlink():
        raise ArchiveBlocked("archive_target_exists", f"Archive '{name}' already exists.")
    if not skip_specs:
        _plan_specs(root, plan, yes)
    return plan


def _plan_specs(root: Path, plan: ArchivePlan, yes: bool) -> None:
    specs_dir = root.joinpath(*SPECS_PARTS)
    updates = discover_spec_files(plan.change_dir / "specs")
    if not updates:
        return
    built = []
    try:
        for spec_id, source in updates:
            target = specs_dir.joinpath(*spec_id.split("/"), "spec.md")
            old = _old_spec(root, spec_id, target)
            old_text = None if old is None else old.decode("utf-8", errors="replace")
            delta = read_spec_text(source)
            shown = _real(specs_dir).joinpath(*spec_id.split("/"), "spec.md")  # as the CLI names it
            spec = build_updated_spec(spec_id, delta, old_text, plan.change, str(shown))
            built.append((spec_id, target, old, old_text, spec))
            plan.warnings += spec.warnings
    except SpecUpdateError as error:
        if not yes:
            _needs_confirmation(len(updates))
        raise ArchiveBlocked(
            "archive_spec_update_failed",
            str(error),
            "Fix the change delta specs and rerun. No files were changed.",
        ) from error
    if not yes:
        _needs_confirmation(len(updates))
    for spec_id, _target, _old, _old_text, spec in built:
        if spec_content_errors(spec.rebuilt) > 0:
            raise ArchiveBlocked(
                "archive_spec_validation_failed",
                f"Rebuilt spec for '{spec_id}' failed validation. No files were changed.",
                f"Run openspec validate {spec_id} after fixing the change deltas.",
            )
    plan.totals = Counts()
    for spec_id, target, old, old_text, spec in built:
        if spec.counts.total() == 0:
            continue
        text = _match_line_ending(spec.rebuilt, old_text)
        plan.writes.append(SpecWrite(spec_id, target, old, text.encode("utf-8")))
        plan.totals.added += spec.counts.added
        plan.totals.modified += spec.counts.modified
        plan.totals.removed += spec.counts.removed
        plan.totals.renamed += spec.counts.renamed


def _old_spec(root: Path, spec_id: str, target: Path) -> bytes | None:
    """The main spec's bytes before the archive (None: it is new), read by the regular-file
    rule: no link on its way, a regular file only, at most ``MAX_SPEC_BYTES`` (else
    NotARegularFile, which :func:`plan_archive` turns into its refusal)."""
    refuse_links(root, (*spec_parts(spec_id), "spec.md"), last_is_file=True)
    try:
        return read_regular(target, MAX_SPEC_BYTES, follow=False)
    except FileNotFoundError:
        return None


def _real(folder: Path) -> Path:
    try:
        return folder.resolve(strict=True)
    except OSError:
        return folder


def _needs_confirmation(count: int) -> None:
    raise ArchiveBlocked(
        "archive_confirmation_required",
        f"Updating {count} spec(s) requires confirmation: rerun with --yes.",
        "openspec archive <change-name> --json --yes",
    )
