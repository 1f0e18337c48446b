"""The reviewer's parts that decide and do not run anything (SPEC §13 "Review").

Once a run's tasks, verification and conformance pass, a fresh reviewer agent judges the change
in a sandbox where the whole work tree is read-only except the change's task file(s); the loop
runs that round (``loop/review_round.py``). What the round needs that is pure lives here:

- ``prompt``      the reviewer's prompt (:func:`~ralph_lsp.reviewer.prompt.build_review_prompt`
  from a :class:`~ralph_lsp.reviewer.prompt.ReviewContext`): proposal, delta specs, the run's
  diff, the verification results and the conformance table (rendered Markdown, handed in);
- ``edit_check``  the host's check of the task file before and after
  (:func:`~ralph_lsp.reviewer.edit_check.check_edit`): only appended unchecked tasks stand;
- ``rounds``      a round's verdict and what the run does next (:func:`~ralph_lsp.reviewer.
  rounds.after_round`), and the record of each round (:class:`~ralph_lsp.reviewer.rounds.
  RoundRecord`).

Invariant: reads files and decides, nothing more: no process, git, clock or write; knows
nothing of runs' loops, agents or LSP (it imports only ``openspec``).
"""
