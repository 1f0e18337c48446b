"""Remote runs (SPEC §9 "Remote runs on Ray"): a run executed as a job of an existing engine.

- ``job``   the job's entrypoint, ``python -m ralph_lsp.remote.job``: clones the run branch,
  hosts the run (:class:`~ralph_lsp.runner.host.RunHost`, worktree-style) with its events on
  stdout, pushes one commit per iteration, and takes guidance and stop from refs of the remote;
- ``remote_run``  one remote run as this side knows it:
  :func:`~ralph_lsp.remote.remote_run.plan_push` (the run's base pushed, uncommitted changes
  refused), the job's entrypoint, and :class:`~ralph_lsp.remote.remote_run.RemoteRun` (status,
  record and tasks.md mirror from the events);
- ``ray_runs``  :class:`~ralph_lsp.remote.ray_runs.RayRuns`, the operator's side with the surface of
  :class:`~ralph_lsp.runner.runs.Runs` (start, wait, stop, guide, statuses): pushes ``HEAD`` to
  ``ralph/<change>/<runId>``, submits the job through Ray's Jobs API, follows its log as the
  event stream, writes the local ``.ralph/`` history from it (and a mirror of the job's
  ``tasks.md`` that lenses follow) and fetches the branch back;
- ``secrets`` what may not travel in a job's entrypoint: a remote's credentials (stripped; the
  worker's git credential helper supplies them) and secrets by name or by value (refused);
- ``__main__`` the remote runner, ``python -m ralph_lsp.remote``: the detached runner's process
  and arguments (``ralph_lsp.runner.__main__``) with its runs executed by ``RayRuns``. The
  server and ``run --detach`` start it for ``ralph.runner`` ``ray``, so a remote run is found,
  attached to, stopped and guided as a local run is, and outlives the editor.

Invariant: Ray is imported only inside ``ray_runs`` and only when a run is started there (nothing
else of the product imports it); no secret travels in a job's entrypoint or environment; git
writes on the remote only ``ralph/…`` refs, never forced (``git/remote.py``).
"""
