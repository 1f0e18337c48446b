"""OpenSpec diagnostics (SPEC §11): the domain's validation published as LSP diagnostics.

Delta specs, main specs, proposal.md, `.openspec.yaml` and `openspec/config.yaml` get the
findings of `openspec validate` (source `openspec`, code: the rule id), live on every edit of an
open document (its text, not the disk's) and on every change on disk (the root's watch of its
`openspec/` folder, `server/watching/root.py`). A main spec's change re-validates the deltas
that target it. The findings go to the diagnostics store (`diagnostics.py`), which sends a
tasks.md's with its own (`publishing.py`) and a delta spec's with its conformance diagnostics
(`conformance_view.py`): one URI, one list.

An edit's validation runs in one worker thread, off the event loop: the validations read nothing
of the server (the open documents, the strict setting and the position encoding are taken on
the loop first), and their diagnostics are applied on the loop in the order asked for, an
item's result dropped when a newer validation of the item was asked for meanwhile. The sweep
over every item (at start, when folders or settings change) runs on the loop in slices
(``sweep.py``), once tasks.md's sweep has ended.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from lsprotocol import types

from ralph_lsp.openspec.validation.change_rules import validate_change
from ralph_lsp.openspec.validation.discovery import discover_spec_files
from ralph_lsp.openspec.validation.issues import Issue
from ralph_lsp.openspec.validation.items import list_change_ids, list_spec_ids
from ralph_lsp.openspec.validation.proposal import proposal_issues
from ralph_lsp.openspec.validation.spec_rules import read_text, spec_issues
from ralph_lsp.openspec.validation.targets import Targets, config_issues, targets_of
from ralph_lsp.server.conformance_view import ConformanceView
from ralph_lsp.server.diagnostics import DiagnosticsStore
from ralph_lsp.server.event_source import SpecsChanged
from ralph_lsp.server.publishing import Publisher
from ralph_lsp.server.render import column
from ralph_lsp.server.session import Session
from ralph_lsp.server.sweep import Sweep

log = logging.getLogger(__name__)
SOURCE = "openspec"
SETTLE_SECONDS = 0.3
MAX_TEXT = 16 << 20  # as for tasks.md: a buffer larger than this is not analysed
_SEVERITY = {
    "ERROR": types.DiagnosticSeverity.Error,
    "WARNING": types.DiagnosticSeverity.Warning,
    "INFO": types.DiagnosticSeverity.Information,
}


@functools.lru_cache(maxsize=8)
def _lines(text: str) -> list[str]:
    """A text's lines, split once for all of its findings (callers must not modify them)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def to_diagnostic(issue: Issue, text: str, strict: bool, encoding: str | None) -> types.Diagnostic:
    """One finding as a diagnostic on the line our parser found (the file's first line if none)."""
    lines = _lines(text)
    line = min(issue.at or 0, len(lines) - 1)
    severity = _SEVERITY[issue.level]
    if strict and issue.level == "WARNING":
        severity = types.DiagnosticSeverity.Error
    end = column(lines[line], len(lines[line]), encoding)
    return types.Diagnostic(
        range=types.Range(types.Position(line, 0), types.Position(line, end)),
        message=issue.message,
        severity=severity,
        source=SOURCE,
        code=issue.code,
    )


#: The diagnostics of an item (a change folder or a file), by file.
Found = dict[Path, list[types.Diagnostic]]
# A file's findings past this many are one diagnostic that says how many more: a crafted spec
# with 18,000 findings made 5 MB of JSON that the event loop wrote while requests waited (and
# no editor's problem list is read that far).
MAX_DIAGNOSTICS = 1000
Work = Callable[[], Found]


def _change(change: Path, overrides: dict[Path, str], strict: bool, encoding: str | None) -> Found:
    issues: list[Issue] = []
    texts = dict(overrides)  # and each file read from disk, once for all three readers
    if change.is_dir():
        deltas = discover_spec_files(change / "specs")
        issues = validate_change(change, strict=strict, texts=texts, deltas=deltas).issues
        issues += proposal_issues(change, texts, deltas)
    by_file: dict[Path, list[Issue]] = {}
    for issue in issues:
        by_file.setdefault(issue.file or change / "proposal.md", []).append(issue)
    return _diagnose(by_file, texts, strict, encoding)


def _file(
    file: Path, check: Any, overrides: dict[Path, str], strict: bool, encoding: str | None
) -> Found:
    try:
        text = overrides[file] if file in overrides else read_text(file)
    except OSError:
        return {}
    return _diagnose({file: check(text, file)}, overrides, strict, encoding)


def _diagnose(
    by_file: dict[Path, list[Issue]], texts: dict[Path, str], strict: bool, encoding: str | None
) -> Found:
    """Each file's findings as diagnostics, placed on its text (the open buffer's, or the
    disk's)."""
    found: Found = {}
    for file in sorted(by_file):
        text = texts.get(file)
        if text is None:
            try:
                text = read_text(file)
            except OSError:
                text = ""
        issues = by_file[file]
        shown = [to_diagnostic(i, text, strict, encoding) for i in issues[:MAX_DIAGNOSTICS]]
        if len(issues) > MAX_DIAGNOSTICS:
            shown.append(_more(shown[-1].range, len(issues) - MAX_DIAGNOSTICS))
        found[file] = shown
    return found


def _more(after: types.Range, left: int) -> types.Diagnostic:
    """The one diagnostic standing for the findings past :data:`MAX_DIAGNOSTICS`."""
    return types.Diagnostic(
        range=types.Range(start=after.end, end=after.end),
        message=(
            f"… and {left} more findings in this file, not shown here: `ralph-lsp validate`"
            " lists every one"
        ),
        severity=types.DiagnosticSeverity.Information,
        source=SOURCE,
        code="openspec.more",
    )


class Validation:
    """Validates what an edit or a change on disk touches and publishes it, per file."""

    def __init__(
        self,
        session: Session,
        store: DiagnosticsStore,
        publisher: Publisher,
        conformance: ConformanceView,
    ) -> None:
        self.session = session
        self.docs = session.docs
        self.publisher = publisher
        self.conformance = conformance
        self._store = store  # its findings join tasks.md's own and a delta spec's conformance
        store.register(SOURCE, covers=_anything)
        self._owned: dict[Path, set[Path]] = {}  # item (change folder or file) → files published
        self._watched: set[Path] = set()
        self.sweep: Sweep[tuple[Path, Work]] = Sweep(
            session.run_task, lambda: session.stopping, "openspec sweep"
        )
        session.events.on(SpecsChanged, lambda event: self.touched(event.paths))
        # Validation runs in one worker thread, off the event loop: a large or crafted file
        # cannot hold requests while it is read. `_issued` counts each item's validations
        # asked for, so that only the newest one's findings are applied.
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "openspec-validation")
        self._issued: dict[Path, int] = {}

    # -- inputs ------------------------------------------------------------------------------

    def strict(self) -> bool:
        return bool(self.session.config.settings().validation_strict)

    def overrides(self) -> dict[Path, str]:
        """The text of every open document: an edit counts before it is saved."""
        out: dict[Path, str] = {}
        workspace = self.session.workspace
        for path in self.docs.open_paths():
            try:
                text = workspace.get_text_document(self.docs.uri_for(path)).source
            except Exception:  # a document the client closed meanwhile
                continue
            if len(text) <= MAX_TEXT:  # a larger buffer is not analysed (the disk's text is)
                out[path] = text
        return out

    def touched(self, paths: Iterable[Path], *, saved: bool = True) -> None:
        """Validate what ``paths`` touch. ``saved=False``: only an open buffer changed, and the
        scenario lenses, which follow a delta spec's saved text, are left as they are (their
        table, computed again on every keystroke, took a second thread's CPU beside the
        edit's validation)."""
        paths = list(paths)
        targets = Targets()
        for path in paths:
            targets.add(targets_of(path))
        self.run(targets)
        if saved:
            self.conformance.specs_touched(paths)  # a delta spec's scenarios may have changed

    def refresh_all(self) -> None:
        """Validate every item of every root, in the background, once tasks.md's diagnostics
        and lenses are out: a sweep going on is replaced. An item an edit validated meanwhile
        is left to the edit's newer result."""
        roots = set(self.session.roots.roots)
        self.sweep.start(
            lambda: self._expand(Targets(roots=roots)),
            self._sweep_step,
            after=self.publisher.sweep,
        )

    def _sweep_step(self, item_work: tuple[Path, Work]) -> None:
        item, work = item_work
        issued = self._issued.get(item)
        found = work()
        if self._issued.get(item) == issued:
            self._apply(item, found)

    # -- validating --------------------------------------------------------------------------

    def run(self, targets: Targets) -> None:
        """Validate `targets` in the worker thread; each item's findings are applied on the
        event loop when they come, unless a newer validation of the item was asked for
        meanwhile (an edit supersedes the one before it). The worker is one thread, so the
        items are validated, and their findings applied, in the order they were asked for."""
        if self.session.stopping:
            return
        for item, work in self._expand(targets):
            issued = self._issued[item] = self._issued.get(item, 0) + 1
            future = self._worker.submit(self._work_if_current, item, issued, work)
            self.session.run_task(self._apply_when_done(item, issued, future), f"validate {item}")

    def _work_if_current(self, item: Path, issued: int, work: Work) -> Found | None:
        """(In the worker) the item's findings, or None when a newer validation is queued."""
        return work() if self._issued.get(item) == issued else None

    async def _apply_when_done(
        self, item: Path, issued: int, future: concurrent.futures.Future[Found | None]
    ) -> None:
        found = await asyncio.wrap_future(future)
        if found is not None and self._issued.get(item) == issued and not self.session.stopping:
            self._apply(item, found)

    def _expand(self, targets: Targets) -> list[tuple[Path, Work]]:
        """One validation per item, each returning the item's diagnostics by file. What they
        read of the server (open documents, settings, the position encoding) is read here, on
        the event loop: the validations themselves touch no server state."""
        for root in targets.roots:
            changes = root / "openspec" / "changes"
            targets.changes |= {changes / c for c in list_change_ids(root)}
            specs = root / "openspec" / "specs"
            targets.specs |= {specs / s / "spec.md" for s in list_spec_ids(root)}
            targets.configs.add(root / "openspec" / "config.yaml")
        overrides, strict = self.overrides(), self.strict()
        encoding = self.session.position_encoding
        items: list[tuple[Path, Work]] = []
        for change in sorted(targets.changes):
            work = functools.partial(_change, change, overrides, strict, encoding)
            items.append((change, work))
        for spec in sorted(targets.specs):
            items.append(
                (spec, functools.partial(_file, spec, spec_issues, overrides, strict, encoding))
            )
        for config in sorted(targets.configs):
            work = functools.partial(_file, config, config_issues, overrides, strict, encoding)
            items.append((config, work))
        return items

    # -- publishing --------------------------------------------------------------------------

    def _apply(self, item: Path, found: Found) -> None:
        """Send each file's diagnostics, and none to a file the item no longer has findings
        in (on the event loop)."""
        before = self._owned.get(item, set())
        self._owned[item] = set(found)
        for file in sorted(before | set(found)):
            self._send(file, found.get(file, []))

    def _send(self, file: Path, diagnostics: list[types.Diagnostic]) -> None:
        # tasks.md's own are sent with them (publishing.py), and it sends them again itself
        # whenever its document changes: unchanged findings spare rendering it again.
        self._store.put(SOURCE, file, diagnostics, if_changed=file.name == "tasks.md")

    # -- watching the disk -------------------------------------------------------------------

    def watch(self, roots: Iterable[Path]) -> None:
        """The roots whose `openspec/` is watched now (`server/roots.py` watches them, and
        hands their changes to `touched`)."""
        wanted = set(roots)
        for root in wanted - self._watched:
            # What changed before the watch was in place is found by validating the project.
            self.session.run_task(self._settle(root), f"validate {root} once watched")
        self._watched = wanted

    async def _settle(self, root: Path) -> None:
        await asyncio.sleep(SETTLE_SECONDS)
        self.refresh_all()

    def stop(self) -> None:
        self.conformance.stop()
        self._watched.clear()
        self._worker.shutdown(wait=False, cancel_futures=True)


def _anything(file: Path) -> bool:
    return True
