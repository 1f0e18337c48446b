"""TODO codemap."""

from ralph_lsp.cli.main import main

__all__ = ["main"]
