"""``ralph-lsp …``: the headless command line (SPEC §7), one module per group of subcommands.

- ``main``          the parser, ``run`` (the engine's events rendered to a terminal), ``changes``,
  ``prompt``, ``verify``, ``history`` and ``serve``;
- ``git_commands``  ``diff`` and ``restore``;
- ``runs``          ``runs``, ``attach``, ``stop``, ``guide``, ``run --detach`` and ``--events``
  (runs in runners, SPEC §9).

Invariant: the CLI drives the same engine as the server and holds no run logic of its own; it
imports ``server`` only to serve LSP, and reaches runs of other processes only through
``runner``.
"""

from ralph_lsp.cli.main import main

__all__ = ["main"]
