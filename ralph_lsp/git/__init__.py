"""Everything that runs git (SPEC §8): the wrapper, checkpoints, restore and worktrees.

- ``command``      the one way git is started (:func:`run_git`, :class:`Repo`,
  :class:`GitError`, ``find_repo``), with the environment every call gets;
- ``checkpoints``  the work tree's whole state as a commit under ``refs/ralph/…``, made with a
  temporary index (:class:`Checkpointer`, :class:`Checkpoint`), their diffs and pruning;
- ``refs``         the checkpoints' ref names (``refs/ralph/@<rootId>/<change>/<runId>/<n>``, a
  restore's ``@undo``, v2's still read), listed, and a run's and an iteration's pair picked;
- ``restore``      the work tree's files put back as at a checkpoint, after recording the current
  state so the restore can be undone (:class:`RestoreResult`);
- ``worktrees``    a run's own ``git worktree`` on ``ralph/<change>`` (:class:`Worktree`);
- ``remote``       a remote run's data plane: push (only ``ralph/…``, never forced), fetch, clone;
- ``review_guard`` a reviewer without a sandbox held to its task file (SPEC §13): the work
  tree as a commit before the round, the run's diff, every write outside the task files undone;
- ``merge``        a run's branch merged (SPEC §12): the conflict check (``merge-tree``), the
  merged commit, a scratch integration worktree, and :func:`~ralph_lsp.git.merge.advance`.

Outside this package, the wrapper is reached only for its types (:class:`Repo`, :class:`GitError`,
``find_repo``, exported here); nothing outside ``git/`` imports ``git.command`` or starts git.

Invariant: only this package starts git (``make lint`` holds that ``git.command`` is imported
from nowhere else, and ``tests/test_imports.py`` that no other module names git in an argv). It
never touches the user's index, ``HEAD``, branches, stash or files except in ``restore``, in
undoing a reviewer's writes outside its task file (``review_guard``), and in a merge the user
asked for (``merge``): it merges or rebases only in a scratch integration
worktree, moves a target branch only by a compare-and-swap of its ref, fast-forward only, never
forced, and moves a work tree that has the target checked out only as ``git merge --ff-only``
would, refusing first (naming the files) when the merge touches a locally changed or untracked
file. It pushes only to ``ralph/…`` refs of a remote run's remote (``remote``).
It knows nothing of runs' records, agents or LSP.
"""

from ralph_lsp.git.command import GitError, Repo, drivers_pinned, find_repo, forget_drivers

__all__ = ["GitError", "Repo", "drivers_pinned", "find_repo", "forget_drivers"]
