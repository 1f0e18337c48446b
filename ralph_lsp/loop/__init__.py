"""The run: a Ralph loop over one change, from ``ralph.run`` to its final state (SPEC §3).

- ``engine``     :class:`~ralph_lsp.loop.engine.Engine` (start, stop, guide, statuses): the runs of
  a process, a :class:`~ralph_lsp.runs.service.RunService`; the events it emits, the run
  states and a run's start arguments are the run's record (``ralph_lsp.runs``);
- ``run``        one run's loop (``Run``), with its record and status (``reporting``), its
  reading of tasks.md (``following``) and each spawn of its agent (``agent_spawn``: the prompt
  file, the invocation, the process in the run's sandbox); ``run_view`` the run as those
  parts see it (a protocol, and its review's state): they import it, never ``run``, and a run
  reports through the callables the engine gives it, never through the engine;
- ``preconditions`` what is refused before a run starts (git, budget, sandbox; the agent
  program), the one place the engine and the terminal ask;
- ``policy``     the decisions as pure functions: :class:`RunState`, limits, continue/wait/end,
  the model of each spawn (escalation);
- ``iteration``  one spawn of an agent (:class:`AgentIteration`) over ``proc``;
- ``verify``     the verification commands (:class:`Runner`) and what they are inferred from;
  ``verification`` the run's step that runs them: which commands, when they are due, as its
  ``verifying`` phase; ``conformance_step`` the conformance gate beside it (SPEC §13): the JUnit
  reports collected, the table made;
- ``prompt``     the prompt, from the change and the settings only, its fixed part first;
- ``sandboxing`` the run's sandbox (SPEC §10) as the loop uses it: opened with the work tree, the
  egress proxy beside it, every spawn wrapped, what it refused kept for the history;
- ``run_git``    checkpoints and the worktree of one run (:class:`RunGit`), through ``git``;
- ``review``     an iteration's diff, a file at a checkpoint and restore, for the operator;
- ``review_round`` the reviewer's round where a run would succeed (SPEC §13), its hook in ``run``;
- ``budget``     what a run may spend (its costs: ``runs/costs.py``) and ``spawn_facts`` one
  spawn's facts and receipt (read back by ``runs/receipts.py``); the run's record, its history
  and its claim on the change are ``ralph_lsp.runs``'s;
- ``queue``      several changes through one engine; ``on_end`` ``ralph.onRunEnd``;
  ``on_success`` ``ralph.archiveOnSuccess``, a succeeded run's change archived;
- ``plan_run``   a planning run (SPEC §14: ``PlanRun``, ending ``planned``), its prompt in
  ``plan_prompt``, and ``confinement``: the work tree compared around an unsandboxed iteration.

Invariant: the loop never imports ``server`` or ``cli``, nor pygls or lsprotocol; it reaches git
only through ``ralph_lsp.git``, processes only through ``ralph_lsp.proc``, agents only through
``ralph_lsp.agents``. The engine is the one place where a run's parts meet.
"""
