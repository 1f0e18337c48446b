"""``ralph-lsp merge CHANGE --resolve``: "Resolve with agent" (SPEC §12)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from ralph_lsp.cli.common import CliError, change_of
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import Settings


def resolve(root: Path, args: argparse.Namespace, settings: Settings, out: TextIO) -> int:
    """Commit the conflicted merge on the run's branch, then run the change there (worktree
    isolation) with the conflict as guidance; the exit code is the run's (`run`'s codes)."""
    import asyncio

    from ralph_lsp.cli import git_commands
    from ralph_lsp.cli.run import _preflight, _run
    from ralph_lsp.git.merge import MergeError
    from ralph_lsp.merging.resolve import prepare_resolve

    change = change_of(root, args.change)
    settings = settings.replace(isolation="worktree")
    _preflight(settings, root)
    git_commands.check_run(root, settings)
    try:
        plan = prepare_resolve(root, args.change, args.run, args.into)
    except MergeError as exc:
        raise CliError(str(exc)) from None
    print(
        f"⎇ {plan.run.branch} now holds the merge of {plan.into} with conflict markers in"
        f" {', '.join(plan.conflicts)} ({plan.commit[:12]}); the agent resolves them in a run:",
        file=out,
        flush=True,
    )
    code = asyncio.run(_run(change, settings, RunRequest(guidance=[plan.guidance]), out))
    if code == 0:
        print(f"resolved: merge it with `ralph-lsp merge {args.change}`", file=out)
    return code
