"""ralph-lsp: run a Ralph loop of coding agents over an OpenSpec change."""

from __future__ import annotations

__version__ = "0.1.0"


def main(argv: list[str] | None = None) -> int:
    """``ralph-lsp`` and ``python -m ralph_lsp``. An unsupported platform (Windows) is refused
    here, before anything that needs POSIX is imported."""
    import sys

    from ralph_lsp.proc.inspection import unsupported_platform

    reason = unsupported_platform()
    if reason is not None:
        print(f"ralph-lsp: error: {reason}", file=sys.stderr)
        return 2
    from ralph_lsp.cli import main as cli_main

    return cli_main(argv)
