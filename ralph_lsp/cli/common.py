"""What every subcommand shares: the usage error, the root and change a command names, and
the exit codes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn, TextIO

from ralph_lsp.loop.states import RunState
from ralph_lsp.openspec.workspace import (
    Change,
    UnknownChangeError,
    find_root,
    list_changes,
)

EXIT_CODES: dict[str, int] = {
    RunState.SUCCEEDED: 0,
    RunState.FAILED: 1,
    RunState.STUCK: 3,
    RunState.EXHAUSTED: 4,
    RunState.STOPPED: 5,
    RunState.INTERRUPTED: 6,
}


class CliError(Exception):
    """A user error: one line on stderr, exit code 2."""


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


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def fail(message: str) -> NoReturn:
    print(f"ralph-lsp: error: {message}", file=sys.stderr)
    raise SystemExit(2)
