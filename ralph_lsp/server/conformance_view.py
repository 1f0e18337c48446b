"""Conformance where the author looks (SPEC §13): a code lens above every scenario of a delta
spec (``✓ verified · <test>``, ``✗ failing · <test>``, ``○ not run · <test>``, ``○ no test
names this scenario``) and an information diagnostic (``conformance.unlinked``) on each scenario
no test names.

The state is the combination ``ralph-lsp conformance`` prints: the links the project's test files
make now (one :class:`~ralph_lsp.conformance.scan.Scanner` per root) and the cases of the newest
run's last verification (``loop/conformance_step.py``). It is computed off the request path, in
one worker thread (a code lens request answers from the cache, or nothing yet and a refresh once
computed), for the changes the editor asked about (a delta spec opened or shown) and the changes
a run reports on. It is computed again when:

- a test file changes on disk (a watch of the root's folders, ``watching.tree.TreeWatcher``
  with the test globs as its interest) or in an open buffer: that file alone is read again
  (``Scanner.update``), and the log says which and how many;
- a delta spec changes (what validation is told, ``Validation.touched``);
- a run's verification ends (its phase leaves ``verifying``) or the run ends: its cases are read
  again from beside its record;
- ``ralph.conformance.testGlobs`` changes (the root is scanned again).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
from pathlib import Path

from lsprotocol import types

from ralph_lsp.conformance.check import conformance
from ralph_lsp.conformance.globs import DEFAULT_TEST_GLOBS, SKIP_DIRS
from ralph_lsp.conformance.junit import Case
from ralph_lsp.conformance.links import Mention, mentions
from ralph_lsp.conformance.scan import Scanner
from ralph_lsp.conformance.table import FAILING, NOT_RUN, UNLINKED, VERIFIED, Row, Table
from ralph_lsp.runs.status import RunStatus
from ralph_lsp.server.diagnostics import DiagnosticsStore
from ralph_lsp.server.event_source import RunStatusChanged
from ralph_lsp.server.render import NOOP
from ralph_lsp.server.session import Session
from ralph_lsp.server.watching.interests import Interest
from ralph_lsp.server.watching.tree import TreeWatcher

log = logging.getLogger(__name__)
SOURCE = "ralph-lsp"
SOURCE_NAME = "conformance"  # the diagnostics store's name of these
UNLINKED_CODE = "conformance.unlinked"
Key = tuple[Path, str]  # (root, change)
_MARKS = {VERIFIED: "✓ verified", FAILING: "✗ failing", NOT_RUN: "○ not run"}


def delta_spec_of(path: Path) -> Key | None:
    """(root, change) of a delta spec ``<root>/openspec/changes/<c>/specs/**/spec.md``."""
    parts = path.parts
    if path.name != "spec.md":
        return None
    for i in range(len(parts) - 4, 0, -1):
        if parts[i : i + 2] == ("openspec", "changes") and parts[i + 3 : i + 4] == ("specs",):
            if parts[i + 2] == "archive":
                return None
            return Path(*parts[:i]), parts[i + 2]
    return None


def lens_title(row: Row) -> str:
    if row.state == UNLINKED or row.test is None:
        return "○ no test names this scenario"
    return f"{_MARKS[row.state]} · {row.test}"


def _header(row: Row) -> types.Range:
    line = max(0, row.line - 1)
    return types.Range(types.Position(line, 0), types.Position(line + 1, 0))


def unlinked_diagnostic(row: Row) -> types.Diagnostic:
    return types.Diagnostic(
        range=_header(row),
        message=(
            f"no test names scenario {row.title!r}: a test that checks it names it"
            f" (`Scenario: {row.title}` in its name, docstring or a comment)"
        ),
        severity=types.DiagnosticSeverity.Information,
        source=SOURCE,
        code=UNLINKED_CODE,
    )


class ConformanceView:
    """Each wanted change's conformance table, its lenses and its diagnostics."""

    def __init__(self, session: Session, store: DiagnosticsStore) -> None:
        self.session = session
        self._store = store  # a delta spec's unlinked scenarios, beside validation's findings
        store.register(SOURCE_NAME, covers=lambda path: delta_spec_of(path) is not None)
        session.events.on(RunStatusChanged, lambda event: self.run_status(event.status))
        # every Scanner is touched in this one thread only, one job at a time
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "conformance")
        self._scanners: dict[Path, Scanner] = {}
        self._globs: dict[Path, tuple[str, ...]] = {}
        self._buffers: dict[Path, dict[str, tuple[Mention, ...]]] = {}  # open test files' own
        self._texts: dict[Path, dict[str, str]] = {}  # open test files' texts not read yet
        self._cases: dict[Key, list[Case]] = {}
        self.tables: dict[Key, Table] = {}
        self._watches: dict[Path, TreeWatcher] = {}
        self._phases: dict[str, tuple[int, str | None]] = {}  # run id → (iteration, phase)
        self._cases_from: dict[Key, str] = {}  # the run whose cases to read next
        self._wanted: set[Key] = set()
        self._dirty: dict[Path, set[str]] = {}  # root → test files changed on disk
        self._pending: set[Key] = set()
        self._drain: asyncio.Task[None] | None = None

    # -- what the editor asks --------------------------------------------------------------

    def lenses_of(self, path: Path) -> list[types.CodeLens] | None:
        """The lenses of a delta spec (None: not a delta spec), from the cache; a change not
        computed yet is computed now, and the client asked to refresh once it is."""
        key = delta_spec_of(path)
        if key is None:
            return None
        table = self.tables.get(key)
        if table is None:
            self.want(key)
            return []
        rel = path.relative_to(key[0]).as_posix()
        return [
            types.CodeLens(range=_header(r), command=types.Command(lens_title(r), NOOP))
            for r in table.rows
            if r.spec == rel
        ]

    # -- events ----------------------------------------------------------------------------

    def want(self, key: Key) -> None:
        """Compute (again) the table of ``key`` and keep it up to date from now on."""
        if self.session.stopping:
            return
        self._wanted.add(key)
        self._pending.add(key)
        self._watch(key[0])
        if self._drain is None or self._drain.done():
            self._drain = self.session.run_task(self._compute_pending(), "conformance")

    def specs_touched(self, paths: set[Path] | list[Path]) -> None:
        for path in paths:
            key = delta_spec_of(path)
            if key is not None and (key in self._wanted or self.session.docs.is_open(path)):
                self.want(key)

    def tests_changed(self, root: Path, paths: set[Path]) -> None:
        """Test files of ``root`` changed on disk: each is read again, the tables redone."""
        rels = {p.relative_to(root).as_posix() for p in paths if p.is_relative_to(root)}
        if rels:
            self._dirty.setdefault(root, set()).update(rels)
            self._redo(root)

    def is_test_file(self, path: Path) -> bool:
        """Whether ``path`` is a test file of a root whose tables are kept."""
        return self._test_file(path)[0] is not None

    def buffer_changed(self, path: Path, uri: str) -> None:
        """A test file's open buffer changed (or opened): its text is what links now (read
        in the worker, as the disk's files are)."""
        root, rel = self._test_file(path)
        if root is None:
            return
        try:
            text = self.session.workspace.get_text_document(uri).source
        except Exception:  # closed meanwhile
            return
        self._texts.setdefault(root, {})[rel] = text
        self._redo(root)

    def buffer_closed(self, path: Path) -> None:
        """The disk's text links again."""
        root, rel = self._test_file(path)
        if root is not None:
            self._texts.get(root, {}).pop(rel, None)
            self._buffers.get(root, {}).pop(rel, None)
            self.tests_changed(root, {path})

    def run_status(self, status: RunStatus) -> None:
        """A run's status: once its verification ended (its phase left ``verifying``, a new
        iteration began: a follower may see only some statuses) or the run did, its cases
        again."""
        key = (status.root, status.change)
        before = self._phases.get(status.run_id)
        now = (status.iteration, status.phase)
        self._phases[status.run_id] = now
        if status.final:
            self._phases.pop(status.run_id, None)
        ended = before is not None and (
            (before[1] == "verifying" and now[1] != "verifying") or now[0] > before[0]
        )
        if ended or status.final:
            self._cases_from[key] = status.run_id
            self.want(key)
        elif key not in self._wanted:
            self.want(key)

    def settings_changed(self) -> None:
        """``ralph.conformance.testGlobs`` may have changed: a root whose globs did is scanned
        again."""
        for root, globs in list(self._globs.items()):
            if self._test_globs() != globs:
                self._scanners.pop(root, None)
                self._globs.pop(root, None)
                self._redo(root)

    def stop(self) -> None:
        for watcher in self._watches.values():
            watcher.stop()
        self._watches.clear()
        self._worker.shutdown(wait=False, cancel_futures=True)

    # -- computing -------------------------------------------------------------------------

    def _test_globs(self) -> tuple[str, ...]:
        return self.session.config.settings().conformance_test_globs or DEFAULT_TEST_GLOBS

    def _test_file(self, path: Path) -> tuple[Path | None, str]:
        for root in self._scanners:
            if path.is_relative_to(root):
                rel = path.relative_to(root).as_posix()
                if self._scanners[root].pattern.fullmatch(rel):
                    return root, rel
        return None, ""

    def _redo(self, root: Path) -> None:
        for key in self._wanted:
            if key[0] == root:
                self.want(key)

    def _watch(self, root: Path) -> None:
        if root in self._watches:
            return

        def test_file(path: str) -> bool:
            scanner = self._scanners.get(root)
            below = path.startswith(f"{root}{os.sep}")
            rel = Path(path).relative_to(root).as_posix() if below else ""
            return bool(rel) and (scanner is None or bool(scanner.pattern.fullmatch(rel)))

        def skip(parent: str, name: str) -> bool:
            return name in SKIP_DIRS or (name == "openspec" and parent == str(root))

        self._watches[root] = TreeWatcher(
            root,
            [Interest(test_file, lambda paths: self.tests_changed(root, paths))],
            self.session.run_task,
            skip=skip,
            arm_now=False,
        )

    def _scanner(self, root: Path) -> Scanner:
        """(In the worker) the root's scanner, made and walked once."""
        scanner = self._scanners.get(root)
        if scanner is None:
            globs = self._globs[root]
            try:
                scanner = Scanner(root, globs)
            except ValueError as exc:
                log.warning("ralph.conformance.testGlobs: %s; the usual test globs are used", exc)
                scanner = Scanner(root, DEFAULT_TEST_GLOBS)
            scanner.scan()
            self._scanners[root] = scanner
        return scanner

    def _compute(
        self, key: Key, dirty: set[str], texts: dict[str, str], run_id: str | None
    ) -> tuple[Table, str]:
        """(In the worker) the table of ``key``, after the test files ``dirty`` and the open
        buffers' ``texts`` were read."""
        root, change = key
        scanner = self._scanner(root)
        said = ""
        if dirty:
            scanner.update(dirty)
            said = f"{', '.join(sorted(dirty))} read again ({scanner.reads} file(s) read)"
        buffers = self._buffers.setdefault(root, {})
        for rel, text in texts.items():
            buffers[rel] = tuple(mentions(rel, text))
            said = f"{said}; " if said else ""
            said += f"{rel} read from its buffer"
        # here, not at the top: the loop's gate module brings the sandbox and the agents, which
        # a server that only follows runs never imports (tests/test_imports.py)
        from ralph_lsp.loop.conformance_step import last_verification, run_cases

        found = run_cases(root, run_id) if run_id is not None else None  # None: kept none yet
        if found is not None:
            self._cases[key] = found
        elif key not in self._cases:
            self._cases[key] = last_verification(root, change)[1]
        cases = self._cases[key]
        files = {**scanner.linked(), **self._buffers.get(root, {})}
        folder = root / "openspec" / "changes" / change
        return conformance(root, folder, scanner, cases, files=files).table, said

    async def _compute_pending(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending and not self.session.stopping:
            key = min(self._pending)
            self._pending.discard(key)
            root = key[0]
            self._globs.setdefault(root, self._test_globs())
            dirty = self._dirty.pop(root, set())
            texts = self._texts.pop(root, {})
            run_id = self._cases_from.pop(key, None)
            try:
                table, said = await loop.run_in_executor(
                    self._worker, self._compute, key, dirty, texts, run_id
                )
            except Exception:
                log.exception("the conformance table of %s failed", key[1])
                continue
            if said:
                self.session.logs.add(f"conformance: {said}", types.MessageType.Log)
            self._show(key, table)

    def _show(self, key: Key, table: Table) -> None:
        """Keep the table; republish the delta specs whose diagnostics changed; refresh."""
        before = self.tables.get(key)
        self.tables[key] = table
        specs: dict[Path, list[types.Diagnostic]] = {}
        for row in (before.rows if before else ()) + table.rows:
            specs.setdefault(key[0] / row.spec, [])
        for row in table.rows:
            if row.state == UNLINKED:
                specs[key[0] / row.spec].append(unlinked_diagnostic(row))
        for spec, found in specs.items():
            self._store.put(SOURCE_NAME, spec, found, if_changed=True)
        if before != table:
            self.session.refresh_lenses()
