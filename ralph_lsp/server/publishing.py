"""What the client is shown of each tasks.md: diagnostics (sent only when they change) and code
lenses (asked for by the client; a refresh request when they may have changed, at most one in
flight).

Publishing every change's diagnostics (at start, when the workspace folders change) is a
background sweep in slices of the event loop (``sweep.py``), so that with thousands of changes
requests are still answered meanwhile; it keeps no parsed document of a file that is not open
in the editor (10,000 of them would cost over 200 MB)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ralph_lsp.loop.claims import running_elsewhere
from ralph_lsp.loop.history import read_record
from ralph_lsp.openspec.workspace import Change, list_changes, root_of_file, tasks_uri
from ralph_lsp.server import archive, planning, render, worktree_view
from ralph_lsp.server.diagnostics import Sent
from ralph_lsp.server.documents import DocState
from ralph_lsp.server.lifetime import CLIENT_TIMEOUT
from ralph_lsp.server.roots import path_of, root_key
from ralph_lsp.server.sweep import Sweep

if TYPE_CHECKING:
    from ralph_lsp.server.host import Host

log = logging.getLogger(__name__)


class Publisher:
    def __init__(self, ls: Host, sent: Sent) -> None:
        self.ls = ls
        self._sent = sent
        self._refreshing = False
        self._refresh_again = False
        self.sweep: Sweep[tuple[Change, Path]] = Sweep(
            ls.run_task, lambda: ls.stopping, "publish all diagnostics"
        )

    def doc_of(self, uri: str) -> tuple[DocState, Path, str] | None:
        """The document behind ``uri`` with its change's root and name, if it is a change's."""
        path = path_of(uri)
        if path is None or root_of_file(path) is None:
            return None
        root, change = root_key(path)
        return self.ls.docs.get(path), root, change

    def code_lenses(self, uri: str) -> list[types.CodeLens]:
        path = path_of(uri)
        scenarios = self.ls.conformance.lenses_of(path) if path is not None else None
        if scenarios is not None:  # a delta spec: a lens above each scenario
            return scenarios
        found = self.doc_of(uri)
        if found is None:
            path = path_of(uri)
            proposal = archive.proposal_of(path) if path is not None else None
            if proposal is None:
                return []
            return archive.proposal_lenses(proposal) + planning.planned_lenses(self.ls, proposal)
        state, root, change = found
        status = self.ls.feed.status_of(root, change)
        state = worktree_view.followed(self.ls.docs, state, status)
        elsewhere = None if render.is_running(status) else _elsewhere(root, change)
        return render.code_lenses(state, root, change, status, elsewhere)

    def publish(self, path: Path) -> None:
        """Send the diagnostics of one tasks.md when they differ from what the client has."""
        if self.ls.stopping:
            return
        root = root_of_file(path)
        if root is not None:
            self._publish(Change(root, path.parent.name), path)

    def _publish(self, change: Change, path: Path) -> None:
        ls = self.ls
        root, name = change.root, change.name
        status = ls.feed.status_of(root, name)
        state = worktree_view.followed(ls.docs, ls.docs.get(path), status)
        diagnostics = render.diagnostics(state, status, ls.workspace.position_encoding)
        diagnostics += ls.validation.tasks_diagnostics(path)  # openspec's task-file warnings
        uri = ls.docs.uri_for(path) if ls.docs.is_open(path) else tasks_uri(change)
        self._sent.publish(path, uri, diagnostics, state.version)

    def publish_all(self) -> None:
        """Publish every change's tasks.md (and every open one), in the background: a sweep
        already going is replaced by this one."""
        self.sweep.start(self._everything, self._sweep_step)

    def _everything(self) -> list[tuple[Change, Path]]:
        items: list[tuple[Change, Path]] = []
        seen: set[Path] = set()
        for root in self.ls.roots.roots:
            for name in list_changes(root):
                change = Change(root, name)
                path = change.tasks_path
                seen.add(path)
                items.append((change, path))
        for path in sorted(set(self.ls.roots.open_change_paths()) - seen):
            of = root_of_file(path)
            if of is not None:
                items.append((Change(of, path.parent.name), path))
        return items

    def _sweep_step(self, item: tuple[Change, Path]) -> None:
        change, path = item
        self._publish(change, path)
        if not self.ls.docs.is_open(path):
            self.ls.docs.invalidate(path)  # parsed again when it changes or is asked for

    def refresh_lenses(self) -> None:
        """Ask the client to re-request code lenses; at most one request in flight."""
        ls = self.ls
        if ls.stopping or not ls.capability("workspace", "code_lens", "refresh_support"):
            return
        if self._refreshing:
            self._refresh_again = True
            return
        self._refreshing = True
        ls.run_task(self._refresh(), "codeLens refresh")

    async def _refresh(self) -> None:
        try:
            while True:
                self._refresh_again = False
                try:
                    await asyncio.wait_for(
                        self.ls.workspace_code_lens_refresh_async(None), CLIENT_TIMEOUT
                    )
                except Exception as exc:
                    log.debug("codeLens refresh failed: %s", exc)
                if not self._refresh_again or self.ls.stopping:
                    return
        finally:
            self._refreshing = False


def _elsewhere(root: Path, change: str) -> render.Elsewhere | None:
    """The run of ``change`` another live ralph-lsp process holds, if any."""
    owner = running_elsewhere(root, change)
    if owner is None:
        return None
    record = read_record(root, owner.run_id) or {}
    iterations = record.get("iterations")
    done = len(iterations) if isinstance(iterations, list) else 0
    return render.Elsewhere(owner.pid, done + 1)
