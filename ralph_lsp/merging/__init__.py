"""Review and merge a run's branch (SPEC §12): the merge train and the review bundle.

- ``run_branch``  which run, which branch, which target; a run's ``branchState`` written to its
  record (``merged`` with the merge commit, ``needs-review`` with the conflicting files or the
  failing output);
- ``merge``    one run's merge: the conflict check, the merged commit, the project's
  verification in a scratch integration worktree (through ``loop/verify.py``'s ``Runner``, as
  a run verifies), then the target moved by compare-and-swap (``git/merge.py``), retried once
  when the target moved meanwhile (:func:`merge_run`, :class:`Outcome`);
- ``train``    ``merge --all``: a queue's succeeded runs in queue order, each onto the previous
  result, re-verified, parked on failure, one summary (:func:`merge_train`);
- ``review_bundle``  the review bundle: merge-base, files, diff, task → iteration → commit map,
  verification and cost (:func:`review_bundle`);
- ``resolve``  "Resolve with agent": the conflicted merge committed on the run's branch and a
  run of the change whose guidance is the conflict (:func:`prepare_resolve`).

Invariant: never imports ``server/`` or ``cli/`` (nor pygls or lsprotocol); reaches git only
through ``git/``; the target branch moves only through ``git.merge.advance`` (compare-and-swap,
fast-forward only) and only after the merged result passed verification; a run's final state is
never changed, only its ``branchState``.
"""
