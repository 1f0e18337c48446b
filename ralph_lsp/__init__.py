"""ralph-lsp: run a Ralph loop of coding agents over an OpenSpec change.

A language server and a headless command line over one engine; the packages, from the top of
the layers down (``docs/architecture.md`` has a section for each):

- ``cli``          ``ralph-lsp …``, the terminal's view of the engine; ``__main__`` makes it
  ``python -m ralph_lsp``;
- ``server``       the LSP layer: commands, code lenses, diagnostics, file watching, progress;
- ``remote``       runs executed as Ray jobs, their branches pushed to a remote and fetched back;
- ``runner``       a run or a queue in a process of its own: the event stream, live files and
  the control socket, so a run outlives the editor;
- ``merging``      a run's branch reviewed and merged, and the merge train;
- ``loop``         the run: the engine, one run's loop, its policy, verification, prompt, history
  under ``.ralph/`` and git;
- ``runs``         the run's record: its status and events, its request, its record's types,
  ledgers, ids and safe, durable writes under ``.ralph/``, costs and receipts (no process, git
  nor agent);
- ``demo``         the demo agent, a separate process the product never imports;
- ``git``, ``agents``, ``proc``, ``sandbox``, ``archiving``, ``reviewer``, ``conformance``  the
  middle layer, each knowing none of the others: every git command; the agent presets and their
  output parsers; process trees that never outlive a stop; what a run may touch; an archive
  written; the reviewer's prompt and edit check; scenarios matched to tests and JUnit reports;
- ``openspec``     the OpenSpec project read: ``tasks.md``, changes, roots, validation,
  authoring help, archive decided in memory (it reads files and nothing else);
- ``placement``    where a run executes: ``ralph.runner`` read once, for every layer above;
- ``settings``     one typed, fully defaulted settings object, shared by the CLI and the server;
- ``setting_values`` the converters of its values: each checked, or a ``ValueError`` saying
  what was expected;
- ``bursts``       the garbage collector paused over a burst of allocations without cycles
  (a parse, a validation, a cold scan), for every layer above.

Invariant: a package imports only the layers below it (``[tool.importlinter]`` in
``pyproject.toml``, held by ``make lint`` and ``tests/test_imports.py``), pygls and lsprotocol
only in ``server``, the git wrapper only in ``git``. Each package's docstring states its own
invariant and names each of its modules (``tests/test_package_docstrings.py``).
"""

from __future__ import annotations

__version__ = "0.1.0"
