"""While a run works in its own git worktree (SPEC §8), the user's ``tasks.md`` shows the
worktree's progress: its lenses and diagnostics are those of the worktree's ``tasks.md``."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from ralph_lsp.runs.status import RunStatus
from ralph_lsp.server.documents import DocState, DocumentStore


def followed(docs: DocumentStore, state: DocState, status: RunStatus | None) -> DocState:
    """The document to render for a change: the worktree's while its run is active."""
    if status is None or status.final or not status.worktree:
        return state
    uri = urlparse(str(status.worktree.get("tasksUri") or ""))
    if uri.scheme != "file":
        return state
    other = docs.get_disk(Path(unquote(uri.path)))
    return other if other.doc.total else state
