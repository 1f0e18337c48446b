"""Everything that runs git (SPEC §8): the wrapper, checkpoints, restore and worktrees.

- ``command``      the one way git is started (:func:`run_git`, :class:`Repo`,
  :class:`GitError`, ``find_repo``), with the environment every call gets;
- ``checkpoints``  the work tree's whole state as a commit under ``refs/ralph/…``, made with a
  temporary index (:class:`Checkpointer`, :class:`Checkpoint`), their diffs and pruning;
- ``restore``      the work tree's files put back as at a checkpoint, after recording the current
  state so the restore can be undone (:class:`RestoreResult`);
- ``worktrees``    a run's own ``git worktree`` on ``ralph/<change>`` (:class:`Worktree`).

Invariant: only this package starts git (``git.command`` is reachable from nowhere else, which
``make lint`` holds). It never touches the user's index, ``HEAD``, branches, stash or files except
in ``restore``, and never merges, rebases or pushes. It knows nothing of runs' records, agents or
LSP.
"""
