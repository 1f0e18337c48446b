"""The demo agent: not an AI, a small program that behaves like a headless agent CLI (Claude's
stream-json) and does the example change's work, so ``make demo`` and the tests need no API.

- ``agent``  reads the prompt (argument, stdin, or the file it points to), finds ``tasks.md`` and
  checks one task per session, with short pauses;
- ``work``   the files each example task writes;
- ``planner`` given a planning prompt (SPEC §14), the change drafted from its description:
  proposal, delta spec, design and tasks that pass ``openspec validate --strict``;
- ``reviewer``  the demo as a reviewer (SPEC §13): one task per scenario the prompt's conformance
  table does not show verified, else an approval (nothing written).

Invariant: it is started as a separate process, never imported by the product (the demo preset
runs it by module name), and knows only ``openspec`` and the reviewer prompt's markers
(``reviewer``).
"""
