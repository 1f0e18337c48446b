"""Archiving an OpenSpec change: carrying out the plan ``openspec/archive_plan.py`` decides
(SPEC §11).

- ``writer``  :func:`~ralph_lsp.archiving.writer.archive_change` plans and carries out an
  archive all or nothing: each rebuilt main spec written to a temporary file beside it and
  renamed into place, then the change's folder renamed into ``changes/archive/``; on any failure
  every spec is put back as it was and the folder moved back. ``today`` gives the local date.
- ``folders``  every folder below the root opened with ``O_NOFOLLOW`` from the one above and
  each write, rename and unlink done relative to it: a link on the way is refused, even one
  swapped in after the plan's checks.

Invariant: the one place an archive writes, never through a link nor outside the root. It
reads and decides nothing itself (that is ``openspec/``, which never writes), and knows nothing
of runs, git, agents or LSP.
"""
