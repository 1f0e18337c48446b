"""The run: a Ralph loop over one change, from ``ralph.run`` to its final state (SPEC §3).

- ``engine``     :class:`~ralph_lsp.loop.engine.Engine` (start, stop, guide, statuses): the runs of
  a process; ``status`` and ``events`` the events it emits to whoever renders them;
- ``run``        one run's loop (``Run``), with its record and status (``reporting``) and its
  reading of tasks.md (``following``);
- ``policy``     the decisions as pure functions: :class:`RunState`, limits, continue/wait/end,
  the model of each spawn (escalation);
- ``iteration``  one spawn of an agent (:class:`AgentIteration`) over ``proc``;
- ``verify``     the verification commands (:class:`Runner`) and what they are inferred from;
- ``prompt``     the prompt, from the change and the settings only, its fixed part first;
- ``history``    the operator's record under ``.ralph/`` (:class:`RunHistory`, typed records), the
  one-run-per-change claim (:class:`ChangeClaim`) and retention; ``durable`` a record's
  ``fsync`` and rename, done off the event loop by one writer thread;
- ``run_git``    checkpoints and the worktree of one run (:class:`RunGit`), through ``git``;
- ``review``     an iteration's diff, a file at a checkpoint and restore, for the operator;
- ``review_round`` the reviewer's round where a run would succeed (SPEC §13), its hook in ``run``;
- ``claims``     one run per change on the machine; ``costs`` and ``budget`` what a run spent,
  ``receipts`` each iteration's receipt and ``spawn_facts`` one spawn's facts and receipt;
  ``record_schema`` records read back fitted to their types;
- ``queue``      several changes through one engine; ``on_end`` ``ralph.onRunEnd``;
- ``plan_run``   a planning run (SPEC §14: ``PlanRun``, ending ``planned``), its prompt in
  ``plan_prompt``, and ``confinement``: the work tree compared around an unsandboxed iteration.

Invariant: the loop never imports ``server`` or ``cli``, nor pygls or lsprotocol; it reaches git
only through ``ralph_lsp.git``, processes only through ``ralph_lsp.proc``, agents only through
``ralph_lsp.agents``. The engine is the one place where a run's parts meet.
"""
