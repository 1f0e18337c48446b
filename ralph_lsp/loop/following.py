"""tasks.md as a run reads it (SPEC §3): after each iteration in full, during one cheaply (live
progress, re-parsed only when the file changed), and from the archive when the agent archived
the finished change (OpenSpec's last step).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ralph_lsp.openspec.tasks import TasksDoc, read_tasks_text
from ralph_lsp.openspec.tasks_fast import parse_tasks
from ralph_lsp.openspec.workspace import ARCHIVE, Change
from ralph_lsp.runs.states import RunState
from ralph_lsp.runs.status import Level, RunEnd, RunStatus


class TasksFollowing:
    """The tasks.md half of a run (mixed into ``run.Run``)."""

    change: Change
    work: Change  # the change itself, or its copy in the run's worktree
    status: RunStatus
    doc: TasksDoc | None
    archived_to: str | None
    _tasks_stat: tuple[int, int] | None

    def log(self, text: str, level: Level = "info") -> None: ...
    def update(self, *, transition: bool = False, **changes: Any) -> None: ...

    def read_doc(self) -> TasksDoc:
        """Parse tasks.md; raises RunEnd('failed') when it vanished or cannot be read."""
        path = self.work.tasks_path
        if not self.work.folder.is_dir():
            archived = self._archived_tasks()
            if archived is None:
                raise RunEnd(RunState.FAILED, f"the change folder {self.work.folder} was removed")
            path = archived
        try:
            text = read_tasks_text(path)
        except OSError as exc:
            raise RunEnd(
                RunState.FAILED,
                f"tasks.md cannot be read ({exc.strerror or exc}); nothing was changed",
            ) from exc
        if text is None:
            raise RunEnd(RunState.FAILED, f"{path} is missing")
        doc = parse_tasks(text)
        if path != self.work.tasks_path and not (doc.total and doc.all_done):
            raise RunEnd(
                RunState.FAILED,
                f"the change was archived to {path.parent} with"
                f" {doc.total - doc.completed} of {doc.total} tasks open",
            )
        self.doc = doc
        return doc

    def _archived_tasks(self) -> Path | None:
        """The tasks.md of this change archived by the agent (OpenSpec's last step moves it to
        ``openspec/changes/archive/<date>-<name>/``), newest first, if there is one."""
        archive = self.work.folder.parent / ARCHIVE
        try:
            found = sorted(
                (e.path for e in os.scandir(archive) if e.name.endswith(f"-{self.change.name}")),
                reverse=True,
            )
        except OSError:
            return None
        for folder in found:
            path = Path(folder) / self.work.tasks_path.name
            if path.is_file():
                if not self.archived_to:
                    self.archived_to = str(path.parent)
                    self.log(f"the agent archived the change to {path.parent}")
                return path
        return None

    def poll_tasks(self) -> tuple[int, int]:
        """Cheap live progress during an iteration: re-parse only when the file changed.
        Returns (completed, total) as the status now says."""
        try:
            st = self.work.tasks_path.stat()
        except OSError:
            return self.status.completed, self.status.total
        key = (st.st_mtime_ns, st.st_size)
        if key != self._tasks_stat:
            self._tasks_stat = key
            try:
                text = read_tasks_text(self.work.tasks_path)
            except OSError:
                text = None
            if text is not None:
                doc = parse_tasks(text)
                if (doc.completed, doc.total) != (self.status.completed, self.status.total):
                    self.update(completed=doc.completed, total=doc.total)
        return self.status.completed, self.status.total
