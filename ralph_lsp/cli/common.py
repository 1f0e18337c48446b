"""What every subcommand shares: the root and change a command names and the exit codes (the
usage error, from ``errors``, is re-exported)."""

from __future__ import annotations

from pathlib import Path

from ralph_lsp.cli.errors import CliError, fail, is_terminal
from ralph_lsp.openspec.workspace import (
    Change,
    UnknownChangeError,
    find_root,
    list_changes,
)
from ralph_lsp.runs.states import RunState

__all__ = ["EXIT_CODES", "CliError", "change_of", "fail", "is_terminal", "root_of"]

EXIT_CODES: dict[str, int] = {
    RunState.SUCCEEDED: 0,
    RunState.FAILED: 1,
    RunState.STUCK: 3,
    RunState.EXHAUSTED: 4,
    RunState.STOPPED: 5,
    RunState.INTERRUPTED: 6,
    RunState.PLANNED: 7,
}


def root_of(arg: str | None) -> Path:
    start = Path(arg) if arg else Path.cwd()
    if not start.exists():
        raise CliError(f"{start} does not exist")
    root = find_root(start)
    if root is None:
        raise CliError(
            f"no OpenSpec project at or above {start.resolve()}"
            " (looked for a folder holding openspec/changes/); pass --root DIR"
        )
    return root


def change_of(root: Path, name: str) -> Change:
    known = list_changes(root)
    if name not in known:
        raise CliError(str(UnknownChangeError(name, known)))
    return Change(root, name)
