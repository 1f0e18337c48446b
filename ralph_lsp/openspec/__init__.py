"""The model of an OpenSpec project: what a ``tasks.md`` says, which changes and roots exist, and
the project's context (SPEC §2).

- ``tasks``         the model and the rule: :class:`~ralph_lsp.openspec.tasks.TasksDoc`
  (:class:`Task`, :class:`Story`, :class:`Blocked`, :class:`Finding`), ``count_tasks``, the line
  rules the parser builds on, and ``open_regular`` (regular files only, opened non-blocking);
- ``task_rule``, ``regular_files``  the task-line rule and the regular-file reader alone (what
  ``tasks`` re-exports), for readers that need nothing else of it (``validate``);
- ``tasks_fast``    the one parser (``parse_tasks``: what the server, engine and CLI call),
  measured, held equal to the reference parser of ``tests/tasks_reference.py``, and
  ``summarize_tasks`` for listing many changes;
- ``workspace``     OpenSpec roots and their active changes (:class:`Change`, ``find_roots``,
  ``resolve_change``);
- ``project_context``  ``openspec/config.yaml``'s context for the prompt;
- ``validation``    ``openspec validate`` 1.13.2, rule for rule (SPEC §11);
- ``authoring``     authoring help for spec files (outline, completion, definition, hover, quick
  fixes), read with ``validation``'s readers;
- ``task_files``    a change's task files, as its OpenSpec schema's ``apply.tracks`` names them;
- ``planning``      what planning reads (SPEC §14): change names, main-spec titles, the schema's
  artifacts, the gate a drafted change must pass, design.md's open questions;
- ``spec_apply``, ``archive_checks``, ``archive_plan``, ``archive_paths``  archive decided in
  memory (``plan_archive``): the deltas applied, the rebuilt specs checked, no link on a path it
  writes or moves, main specs read by the regular-file rule; ``archiving/`` writes. Archive reads
  specs with validation's reader and types and applies a delta with validation's
  ``delta_apply``, the one port of the CLI's operations, which the dry run shares.

Invariant: this package reads files and does nothing else: no process, no clock, no network, no
writes. It knows nothing of runs, git, agents or LSP, and imports nothing of ``ralph_lsp`` but
itself and ``settings`` (``make lint`` holds it).
"""
