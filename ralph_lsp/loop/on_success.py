"""``ralph.archiveOnSuccess`` (SPEC §11): a run that succeeded archives its change, as
``openspec archive --yes`` does, and says so in one log line either way."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ralph_lsp.archiving.writer import ArchiveBlocked, archive_change
from ralph_lsp.loop.iteration import Level
from ralph_lsp.openspec.workspace import Change

Log = Callable[[str, Level], None]


async def archive(change: Change, log: Log) -> str:
    """Archive ``change`` (all or nothing); the words to add to the run's reason ("" if refused).

    A refusal (validation, a target that exists, …) or a failed write is logged as a warning;
    the run still succeeded and nothing was changed."""
    try:
        plan = await asyncio.to_thread(archive_change, change.root, change.name, yes=True)
    except ArchiveBlocked as blocked:
        log(f"archiveOnSuccess: {change.name} was not archived: {blocked.message}", "warning")
        return ""
    except OSError as exc:
        log(f"archiveOnSuccess: archiving {change.name} failed ({exc}); nothing changed", "warning")
        return ""
    totals = plan.totals
    specs = (
        f"{len(plan.writes)} spec(s) written (+{totals.added} ~{totals.modified}"
        f" -{totals.removed} →{totals.renamed})"
        if totals is not None and plan.writes
        else "no spec changed"
    )
    log(f"archiveOnSuccess: archived {change.name} as {plan.archive_name}; {specs}", "info")
    return f"; archived as {plan.archive_name}"
