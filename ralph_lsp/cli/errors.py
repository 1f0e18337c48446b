"""The usage error and how it ends the program, apart from ``common`` so that a command which
needs neither the engine nor the workspace (``validate``) does not import them to report one."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's constant, without importing typing (mypy reads it the same)
if TYPE_CHECKING:
    from typing import NoReturn, TextIO


class CliError(Exception):
    """A user error: one line on stderr, exit code 2."""


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def fail(message: str) -> NoReturn:
    print(f"ralph-lsp: error: {message}", file=sys.stderr)
    raise SystemExit(2)
