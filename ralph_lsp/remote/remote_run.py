"""One remote run as the operator's side knows it (SPEC §9 "Remote runs on Ray"): what is
pushed before its job is submitted (:func:`plan_push`: the run's base on its branch, refused
when the work tree has uncommitted changes the job would not see), the job's entrypoint (no
secret in it), and :class:`RemoteRun`: its status, its local record and the mirror of its
tasks.md, written from the job's events, and its branch fetched back with a local checkpoint
ref per iteration. Nothing here imports Ray."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import re
import shlex
from pathlib import Path
from typing import Any

from ralph_lsp.git import Repo, find_repo
from ralph_lsp.git import remote as gr
from ralph_lsp.git.checkpoints import set_ref
from ralph_lsp.git.refs import ref_name
from ralph_lsp.loop.engine import EngineError, EngineEvent, LogEvent, RunStatus, StatusEvent
from ralph_lsp.remote import secrets
from ralph_lsp.runs.claims import ChangeClaim
from ralph_lsp.runs.events import (
    CheckpointEvent,
    EndEvent,
    GuidanceEvent,
    IterationEvent,
    TasksEvent,
)
from ralph_lsp.runs.history import RunHistory, atomic_write_text, history_root
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.runs.states import RunState
from ralph_lsp.runs.status import now_iso
from ralph_lsp.settings import Settings, settings_to_dict

log = logging.getLogger(__name__)
WORKER_PYTHON = "python"  # the worker's own Python, with ralph-lsp installed
# Settings that mean something only on this machine: not sent to the job.
_LOCAL_ONLY = ("runner", "ray.address", "ray.resources", "ray.gitRemote", "onRunEnd")


@dataclasses.dataclass
class Plan:
    """What ``start`` pushed: where the job finds the run."""

    repo: Repo
    url: str
    run_id: str
    branch: str
    base: str
    subdir: str

    @property
    def shown(self) -> str:
        """The remote without its credentials: what the job, the record and the log get (the
        worker's git credential helper supplies them there)."""
        return secrets.public_url(self.url)


def plan_push(root: Path, change: str, settings: Settings, run_id: str) -> Plan:
    """Refuse what the job could not see; push ``HEAD`` to the run's new branch."""
    repo = find_repo(root)
    if repo is None:
        raise EngineError(
            f"a Ray run pushes its base with git, and {root} is not in a git work tree"
        )
    base = repo.rev("HEAD")
    if base is None:
        raise EngineError("a Ray run starts from a commit; commit once, then run again")
    url = settings.ray_git_remote or gr.origin_url(repo)
    if url is not None:
        url = gr.absolute_url(repo.top, url)  # the job clones it on another machine
    if url is None:
        raise EngineError("a Ray run needs a git remote: set ralph.ray.gitRemote or add an origin")
    dirty = gr.uncommitted(repo)
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise EngineError(
            f"the work tree has uncommitted changes that the Ray job would not see ({shown});"
            " commit or stash them, then run again"
        )
    branch = gr.run_branch(change, run_id)
    gr.push(repo.top, url, base, "refs/heads/" + branch)
    subdir = os.path.relpath(root.resolve(), repo.top.resolve())
    return Plan(repo, url, run_id, branch, base, subdir)


def _sent(settings: Settings) -> dict[str, Any]:
    return {k: v for k, v in settings_to_dict(settings).items() if k not in _LOCAL_ONLY}


def check_env(settings: Settings, args: dict[str, Any] | None = None) -> None:
    """No secret in the job's entrypoint: the settings sent (``ralph.env``, ``agentArgs``…)
    and the run's arguments travel in it. Refused by name or by value, naming where."""
    refusal = secrets.refusal(_sent(settings), args or {})
    if refusal is not None:
        raise EngineError(refusal)


def entrypoint(plan: Plan, change: str, settings: Settings, request: RunRequest) -> str:
    sent = _sent(settings)
    # Every value as ``--flag=value``: a change (or guidance) starting with "-" stays a value.
    argv = [WORKER_PYTHON, "-m", "ralph_lsp.remote.job", f"--remote={plan.shown}"]
    argv += [f"--branch={plan.branch}", f"--change={change}", f"--run-id={plan.run_id}"]
    argv += [f"--subdir={plan.subdir}", f"--settings={json.dumps(sent, separators=(',', ':'))}"]
    # The queue stays here: the local record says it, the job's run needs not know.
    argv += request.argv(local=False)
    return shlex.join(argv)


# What the worker's run appends to its end reason (loop/run.py ``_end_git``).
_WORKER_BRANCH = re.compile(r"; the work is on branch (\S+) \(review: git diff HEAD\.\.\.\1\)$")


class RemoteRun:
    """One remote run as this side knows it: its status, record and job."""

    def __init__(self, root: Path, change: str, plan: Plan, queue: dict[str, Any] | None) -> None:
        self.root, self.change, self.plan, self.queue = root, change, plan, queue
        self.job_id = ""
        self.task: asyncio.Task[None] | None = None
        self.guided = 0
        self.ended = False
        self.claim: ChangeClaim | None = None
        self.told_where = False  # the end's branch hint was given
        self.tasks_mirror: Path | None = None  # the job's tasks.md as its events tell it
        now = now_iso()
        self.status = RunStatus(
            plan.run_id, change, root, RunState.RUNNING, 0, 0, 0, 0,
            "submitted as a Ray job", now, now, None, worktree=self.worktree(), queue=queue,
        )  # fmt: skip
        self.history = RunHistory(root, plan.run_id, lambda text: log.warning("%s", text))
        self.iterations: list[dict[str, Any]] = []
        self.guidance: list[dict[str, Any]] = []
        self.checkpoints: dict[int, str] = {0: plan.base}

    def worktree(self) -> dict[str, Any]:
        """Where the run works, as a worktree run says it: its branch (on the remote), no
        folder here, and the local mirror of its tasks.md that lenses follow."""
        mirror = self.tasks_mirror.as_uri() if self.tasks_mirror is not None else None
        plan = self.plan
        return {"branch": plan.branch, "root": None, "tasksUri": mirror, "remote": plan.shown}

    def mirror_tasks(self, text: str) -> None:
        """``.ralph/runs/<runId>/tasks.md``: the job's tasks.md, replaced whole each time."""
        path = history_root(self.root) / "runs" / self.plan.run_id / "tasks.md"
        try:
            atomic_write_text(path, text)
        except OSError as exc:
            log.warning("the remote run's tasks.md could not be mirrored: %s", exc)
            return
        self.tasks_mirror = path

    def local(self, event: EngineEvent) -> EngineEvent:
        """The job's event as this side's: the local root, run id and branch."""
        if isinstance(event, StatusEvent):
            st = dataclasses.replace(
                event.status,
                root=self.root,
                run_id=self.plan.run_id,
                worktree=self.worktree(),
                queue=self.queue,
                reason=self.here(event.status.reason),
            )
            return StatusEvent(st)
        if isinstance(event, LogEvent):
            return dataclasses.replace(event, root=self.root)
        if isinstance(event, EndEvent):
            return dataclasses.replace(
                event, root=self.root, run_id=self.plan.run_id, reason=self.here(event.reason)
            )
        return dataclasses.replace(event, root=self.root, run_id=self.plan.run_id)

    def here(self, reason: str | None) -> str | None:
        """The job's end reason names the branch of the worker's own worktree (``ralph/<change>``
        in its clone), which does not exist on this side: name the ref it was fetched to."""
        if not reason:
            return reason
        local = self.fetched_ref
        return _WORKER_BRANCH.sub(
            f"; the work is on branch {self.plan.branch} of the remote, fetched here as {local}"
            f" (review: git diff HEAD...{local})",
            reason,
        )

    def take(self, event: EngineEvent) -> None:
        if isinstance(event, StatusEvent):
            self.status = event.status
        elif isinstance(event, IterationEvent) and event.phase == "end":
            self.iterations.append(dict(event.record))
        elif isinstance(event, GuidanceEvent):
            self.guidance.append({"text": event.text, "at": now_iso(), "deliveredIn": None})
            self.guidance[-1]["deliveredIn"] = event.delivered_in
        elif isinstance(event, CheckpointEvent) and event.checkpoint:
            self.checkpoints[event.n] = event.checkpoint
        elif isinstance(event, TasksEvent):
            self.mirror_tasks(event.text)
        elif isinstance(event, EndEvent):
            self.ended = True
        if isinstance(event, (StatusEvent, IterationEvent, GuidanceEvent, EndEvent)):
            self.history.save(self.record())

    def record(self) -> dict[str, Any]:
        st = self.status
        return {
            "runId": st.run_id,
            "change": self.change,
            "root": self.root.as_uri(),
            "startedAt": st.started_at,
            "endedAt": st.updated_at if st.final else None,
            "state": st.state,
            "reason": st.reason,
            "owner": {"pid": os.getpid(), "startedAt": None},
            "transitions": [],
            "iterations": list(self.iterations),
            "rateLimited": [],
            "rawOutputDropped": [],
            "worktree": self.worktree(),
            "guidance": list(self.guidance),
            "story": st.story,
            "blocked": [],
            "progress": {
                "completed": st.completed,
                "total": st.total,
                "maxIterations": st.max_iterations,
            },
            "remote": {"engine": "ray", "jobId": self.job_id, "url": self.plan.shown},
        }

    @property
    def fetched_ref(self) -> str:
        """Where this side keeps the run branch it fetched (not a branch of the user's)."""
        return f"refs/ralph/@remote/{self.change}/{self.plan.run_id}"

    def fetch_back(self) -> None:
        """The run branch fetched, each iteration's commit named by a local checkpoint ref."""
        repo = self.plan.repo
        gr.fetch(repo.top, self.plan.url, "refs/heads/" + self.plan.branch, self.fetched_ref)
        for n, commit in sorted(self.checkpoints.items()):
            if repo.rev(commit) is not None:
                set_ref(repo, ref_name(self.root, self.change, self.plan.run_id, n), commit)
