"""What the client is shown of each tasks.md: diagnostics (sent only when they change) and code
lenses (asked for by the client; a refresh request when they may have changed, at most one in
flight).

Publishing every change's diagnostics (at start, when the workspace folders change) is a
background sweep in slices of the event loop (``sweep.py``), so that with thousands of changes
requests are still answered meanwhile; it keeps no parsed document of a file that is not open
in the editor (10,000 of them would cost over 200 MB)."""

from __future__ import annotations

import logging
from pathlib import Path

from lsprotocol import types

from ralph_lsp.openspec.workspace import Change, list_changes, root_of_file, tasks_uri
from ralph_lsp.runs.claims import running_elsewhere
from ralph_lsp.runs.history import read_record
from ralph_lsp.runs.status import RunStatus
from ralph_lsp.server import archive, planning, render, worktree_view
from ralph_lsp.server.conformance_view import ConformanceView
from ralph_lsp.server.diagnostics import Computed, DiagnosticsStore
from ralph_lsp.server.documents import DocState
from ralph_lsp.server.event_source import ChangesMoved, RunStatusChanged
from ralph_lsp.server.root_set import path_of, root_key
from ralph_lsp.server.session import Session
from ralph_lsp.server.sweep import Sweep

SOURCE = "tasks"  # the store's name of tasks.md's own diagnostics (render.py's)

log = logging.getLogger(__name__)


class Publisher:
    def __init__(
        self, session: Session, store: DiagnosticsStore, conformance: ConformanceView
    ) -> None:
        self.session = session
        self.docs = session.docs
        self.conformance = conformance
        self._store = store
        store.register(SOURCE, covers=_is_tasks, provide=self._computed)
        self.sweep: Sweep[tuple[Change, Path]] = Sweep(
            session.run_task, lambda: session.stopping, "publish all diagnostics"
        )
        session.events.on(RunStatusChanged, self._run_status)
        session.events.on(ChangesMoved, lambda event: self.publish_all())

    def _run_status(self, event: RunStatusChanged) -> None:
        status = event.status
        self.publish(Change(status.root, status.change).tasks_path)
        self.session.refresh_lenses()

    def doc_of(self, uri: str) -> tuple[DocState, Path, str] | None:
        """The document behind ``uri`` with its change's root and name, if it is a change's."""
        path = path_of(uri)
        if path is None or root_of_file(path) is None:
            return None
        root, change = root_key(path)
        return self.docs.get(path), root, change

    def code_lenses(self, uri: str) -> list[types.CodeLens]:
        path = path_of(uri)
        scenarios = self.conformance.lenses_of(path) if path is not None else None
        if scenarios is not None:  # a delta spec: a lens above each scenario
            return scenarios
        found = self.doc_of(uri)
        if found is None:
            path = path_of(uri)
            proposal = archive.proposal_of(path) if path is not None else None
            if proposal is None:
                return []
            return archive.proposal_lenses(proposal) + planning.planned_lenses(
                self.session, proposal
            )
        state, root, change = found
        status = self.session.status_of(root, change)
        state = worktree_view.followed(self.docs, state, status)
        elsewhere = None if render.is_running(status) else _elsewhere(root, change, status)
        return render.code_lenses(state, root, change, status, elsewhere)

    def publish(self, path: Path) -> None:
        """Send the diagnostics of one tasks.md when they differ from what the client has."""
        if self.session.stopping:
            return
        root = root_of_file(path)
        if root is not None:
            self._publish(Change(root, path.parent.name), path)

    def _publish(self, change: Change, path: Path) -> None:
        """tasks.md's own diagnostics, sent with the other sources' (openspec's warnings)."""
        own = self._render(change, path)
        self._store.put(SOURCE, path, own.diagnostics, version=own.version, uri=own.uri)

    def _render(self, change: Change, path: Path) -> Computed:
        docs = self.docs
        status = self.session.status_of(change.root, change.name)
        state = worktree_view.followed(docs, docs.get(path), status)
        diagnostics = render.diagnostics(state, status, self.session.position_encoding)
        uri = docs.uri_for(path) if docs.is_open(path) else tasks_uri(change)
        return Computed(diagnostics, state.version, uri)

    def _computed(self, path: Path) -> Computed:
        """(For the store) tasks.md's own diagnostics now, as another source's change of the
        file is sent."""
        root = root_of_file(path)
        if root is None:  # a tasks.md of no change: none of its own
            return Computed([], None, self.docs.uri_for(path))
        return self._render(Change(root, path.parent.name), path)

    def publish_all(self) -> None:
        """Publish every change's tasks.md (and every open one), in the background: a sweep
        already going is replaced by this one."""
        self.sweep.start(self._everything, self._sweep_step)

    def _everything(self) -> list[tuple[Change, Path]]:
        items: list[tuple[Change, Path]] = []
        seen: set[Path] = set()
        roots = self.session.roots
        for root in roots.roots:
            for name in list_changes(root):
                change = Change(root, name)
                path = change.tasks_path
                seen.add(path)
                items.append((change, path))
        for path in sorted(set(roots.open_change_paths()) - seen):
            of = root_of_file(path)
            if of is not None:
                items.append((Change(of, path.parent.name), path))
        return items

    def _sweep_step(self, item: tuple[Change, Path]) -> None:
        change, path = item
        self._publish(change, path)
        if not self.docs.is_open(path):
            self.docs.invalidate(path)  # parsed again when it changes or is asked for


def _is_tasks(path: Path) -> bool:
    """A tasks.md (the files this module publishes, when they are a change's)."""
    return path.name == "tasks.md"


def _elsewhere(root: Path, change: str, status: RunStatus | None) -> render.Elsewhere | None:
    """The run of ``change`` another live ralph-lsp process holds, if any. Not the run whose
    final status the session already has (``status``): a runner process says its run ended a
    moment before it lets go of the claim, and a lens drawn in between would show the ended
    run as running elsewhere, with nothing to draw it again once the claim is gone."""
    owner = running_elsewhere(root, change)
    if owner is None or (status is not None and status.final and owner.run_id == status.run_id):
        return None
    record = read_record(root, owner.run_id) or {}
    iterations = record.get("iterations")
    done = len(iterations) if isinstance(iterations, list) else 0
    return render.Elsewhere(owner.pid, done + 1)
