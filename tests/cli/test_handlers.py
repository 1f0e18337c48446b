"""Every subcommand's handler, named by module and function in ``cli.HANDLERS`` (imported only
when the subcommand runs), exists: a module renamed without its entry there fails here, not
only when a user types the subcommand."""

from __future__ import annotations

import importlib

from ralph_lsp.cli import HANDLERS


def test_every_handler_resolves() -> None:
    missing = []
    for command, (module, name) in HANDLERS.items():
        handler = getattr(importlib.import_module(f"ralph_lsp.cli.{module}"), name, None)
        if not callable(handler):
            missing.append(f"{command}: ralph_lsp.cli.{module}.{name}")
    assert missing == []
