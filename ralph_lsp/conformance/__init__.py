"""Conformance (SPEC §13): a change's scenarios, the tests that name them, and whether the test
runner said those tests passed.

- ``scenarios``  every ``#### Scenario:`` under an ADDED or MODIFIED requirement of a change's
  delta specs (:class:`Scenario`, keyed ``<capability>/<requirement>/<title>``, with its spec
  and line), read by the authoring outline (``openspec/authoring/outline.py``), the validation's
  own reader; and the titles of the main specs (``main_spec_titles``) for the ``auto`` gate;
- ``globs``      ``ralph.conformance.testGlobs`` (the defaults for Python, JavaScript/TypeScript,
  Go, Rust and Java layouts) as one pattern, and the folders never walked;
- ``links``      a test file's ``Scenario: <title>`` texts and the test each names
  (:class:`Link`, :class:`TestRef`): Python by ``ast``, other languages by their title strings
  and test declarations;
- ``scan``       :class:`Scanner`: the project's test files walked, each re-read only when its
  (mtime_ns, size) changed;
- ``junit``      JUnit XML reports read with defusedxml (a hostile report is a warning and no
  report), their test cases matched to a link's test;
- ``table``      :class:`Row` and :class:`Table`: each scenario's state (``verified``,
  ``failing``, ``not-run``, ``unlinked``), its JSON and Markdown (``build_table``);
- ``check``      a change's table in one call (:func:`~ralph_lsp.conformance.check.conformance`):
  its scenarios, the links the scanner finds now and a verification's reports, as the loop, the
  CLI and the server each ask for it;
- ``gate``       ``ralph.conformance.require`` decided (``auto`` → ``verified`` or ``off``), the
  unmet scenarios in current-state sentences, for the prompt and the run's reasons.

Invariant: pure domain: it reads files and does nothing else (no process, no clock, no network,
no writes), knows nothing of runs, agents or LSP, and imports nothing of ``ralph_lsp`` but
itself, ``openspec`` and ``settings``.
"""
