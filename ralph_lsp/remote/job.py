"""A remote run's job: ``python -m ralph_lsp.remote.job --remote URL --branch B --change C …``.

It runs on a worker node. It checks that the agent program is there (else it ends the run
``failed`` naming the node and the program), clones only the run branch, hosts the run in a
worktree on it (:class:`RunHost`, as the detached runner does) and prints the run's events on
stdout (``docs/events.md``), which the operator follows through the job's log. After each
iteration's commit it pushes the branch (never forced). Every :data:`POLL_SECONDS` it looks at
the remote's ``refs/ralph/guidance/<change>/<runId>/<k>`` (each a commit whose message is the
text; delivered before the next iteration) and ``refs/ralph/stop/<change>/<runId>`` (stop the
run cooperatively). SIGTERM (the engine's own stop) stops the run as ``stop`` does. Its clone
lives in a ``ralph-job-*`` temp folder, removed at the end, or by a later job on the node when
this runner was killed (:func:`new_workdir`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

from ralph_lsp.git import GitError
from ralph_lsp.git import remote as gr
from ralph_lsp.loop.engine import EngineError, EngineEvent, LogEvent, RunStatus, StatusEvent
from ralph_lsp.openspec.tasks import NotARegularFile, read_tasks_text
from ralph_lsp.openspec.workspace import UnknownChangeError
from ralph_lsp.runner import events
from ralph_lsp.runner.host import RunHost
from ralph_lsp.runs.events import CheckpointEvent, EndEvent, TasksEvent
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import Settings, settings_from_dict

POLL_SECONDS = float(os.environ.get("RALPH_REMOTE_POLL_SECONDS", "1.0"))
EXIT_NO_AGENT = 3
MAX_TASKS_EVENT = 256 * 1024  # a tasks.md larger than this is not mirrored (docs/events.md)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ralph_lsp.remote.job")
    p.add_argument("--remote", required=True, help="the git remote to clone from and push to")
    p.add_argument("--branch", required=True, help="the run branch, ralph/<change>/<runId>")
    p.add_argument("--change", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--subdir", default=".", help="the OpenSpec root inside the repository")
    p.add_argument("--settings", default="{}")
    RunRequest.add_arguments(p, local=False)
    return p.parse_args(argv)


def emit(event: EngineEvent) -> None:
    sys.stdout.write(events.dumps(event).decode("utf-8"))
    sys.stdout.flush()


def missing_agent(settings: Settings, root: Path) -> str | None:
    """The agent program when this node lacks it, else None."""
    from ralph_lsp.agents import agent_program
    from ralph_lsp.proc.process import AgentStartError, resolve_program

    try:
        program = agent_program(settings, root)
    except ValueError:
        return None  # the engine says what is wrong with the settings
    try:
        resolve_program(program, settings.env.get("PATH", os.environ.get("PATH")), root)
    except AgentStartError:
        return program
    return None


def fail(root: Path, args: argparse.Namespace, reason: str) -> int:
    emit(LogEvent(root, args.change, f"✗ {reason}", "error"))
    emit(EndEvent(root, args.change, args.run_id, "failed", reason))
    return EXIT_NO_AGENT


class Job:
    def __init__(self, args: argparse.Namespace, settings: Settings, clone: Path) -> None:
        self.args, self.settings, self.clone = args, settings, clone
        self.host: RunHost | None = None
        self.pushes: asyncio.Queue[str | None] = asyncio.Queue()
        self.guided: set[str] = set()
        self.stopping = False
        self.stop_task: asyncio.Future[RunStatus] | None = None
        self.tasks_sent: str | None = None
        self.tasks_too_big = False

    def sink(self, event: EngineEvent) -> None:
        if isinstance(event, StatusEvent):
            self.mirror_tasks(event.status)
        emit(event)
        if isinstance(event, CheckpointEvent) and event.checkpoint and event.n > 0:
            self.pushes.put_nowait(event.checkpoint)

    def mirror_tasks(self, status: RunStatus) -> None:
        """The worktree's tasks.md as a ``tasks`` event when it changed: the operator's side
        cannot read it, and its lenses follow this copy (docs/events.md)."""
        uri = (status.worktree or {}).get("tasksUri")
        if not isinstance(uri, str) or not uri.startswith("file://"):
            return
        try:
            text = read_tasks_text(Path(unquote(urlparse(uri).path)))
        except (OSError, NotARegularFile):
            return
        if text is None or text == self.tasks_sent:
            return
        if len(text.encode("utf-8")) > MAX_TASKS_EVENT:
            if not self.tasks_too_big:
                self.tasks_too_big = True
                kib = MAX_TASKS_EVENT >> 10
                self.log(f"tasks.md is over {kib} KiB: its lines are not mirrored")
            return
        self.tasks_sent = text
        emit(TasksEvent(status.root, status.change, status.run_id, text))

    async def pusher(self) -> None:
        """Push each iteration's commit in order (fast-forwards of the run branch only)."""
        while (commit := await self.pushes.get()) is not None:
            try:
                target = "refs/heads/" + self.args.branch
                await asyncio.to_thread(gr.push, self.clone, self.args.remote, commit, target)
            except GitError as exc:
                self.log(f"the iteration's commit could not be pushed: {exc}", "error")

    async def poller(self) -> None:
        """Guidance and stop from the remote's refs, until the run ends."""
        prefix = gr.guidance_prefix(self.args.change, self.args.run_id)
        stop = gr.stop_ref(self.args.change, self.args.run_id)
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                refs = await asyncio.to_thread(
                    gr.remote_refs, self.clone, self.args.remote, "refs/ralph/"
                )
                await self._take(refs, prefix, stop)
            except (GitError, OSError) as exc:
                self.log(f"guidance and stop could not be read from the remote: {exc}", "warning")

    async def _take(self, refs: dict[str, str], prefix: str, stop: str) -> None:
        assert self.host is not None
        new = sorted(
            (r for r in refs if r.startswith(prefix) and r not in self.guided),
            key=lambda r: int(r.rsplit("/", 1)[1]) if r.rsplit("/", 1)[1].isdigit() else 0,
        )
        if new:
            await asyncio.to_thread(gr.fetch_objects, self.clone, self.args.remote, new)
        for ref in new:
            self.guided.add(ref)
            text = await asyncio.to_thread(gr.read_note, self.clone, refs[ref])
            with contextlib.suppress(EngineError):
                await self.host.guide(text.rstrip("\n"))
        if stop in refs and not self.stopping:
            self.stopping = True
            self.stop_task = asyncio.ensure_future(self.host.stop())

    def log(self, text: str, level: str = "info") -> None:
        root = self.host.root if self.host else self.clone
        emit(LogEvent(root, self.args.change, text, "error" if level == "error" else "warning"))


def _gone(pid_file: Path) -> bool:
    """The runner named by ``pid_file`` has ended (False when it runs, or cannot be told)."""
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError):
        return False
    return False


def new_workdir(parent: Path | None = None) -> Path:
    """A ``ralph-job-*`` folder for this job's clone, its ``owner`` file naming this runner;
    first the folders of runners that are gone (killed, so they could not remove their own) are
    removed, only this user's and only those whose ``owner`` names a process that has ended."""
    parent = parent or Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for old in parent.glob("ralph-job-*"):
            with contextlib.suppress(OSError):
                if old.is_dir() and old.stat().st_uid == os.getuid() and _gone(old / "owner"):
                    shutil.rmtree(old, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix="ralph-job-", dir=parent))
    (work / "owner").write_text(f"{os.getpid()}\n")
    return work


async def main(args: argparse.Namespace) -> int:
    settings, _ = settings_from_dict(json.loads(args.settings))
    settings = settings.replace(isolation="worktree", runner="local")
    work = new_workdir()
    try:
        return await _run(args, settings, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def _run(args: argparse.Namespace, settings: Settings, work: Path) -> int:
    missing = missing_agent(settings, work)
    if missing is not None:
        node = socket.gethostname()
        return fail(work, args, f"the worker node {node} has no agent program {missing!r}")
    clone = work / "repo"
    try:
        await asyncio.to_thread(gr.clone_branch, args.remote, args.branch, clone)
    except GitError as exc:
        return fail(work, args, f"the run branch {args.branch} could not be cloned: {exc}")
    job = Job(args, settings, clone)
    host = RunHost(
        (clone / args.subdir).resolve(),
        args.change,
        settings,
        RunRequest.from_args(args),
        sink=job.sink,
        endpoint=False,
    )
    job.host = host
    try:
        await host.start()
    except (EngineError, UnknownChangeError) as exc:
        return fail(clone, args, str(exc))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(
        signal.SIGTERM,
        lambda: loop.create_task(host.engine.shutdown("the job was stopped by the engine")),
    )
    pusher = asyncio.ensure_future(job.pusher())
    poller = asyncio.ensure_future(job.poller())
    try:
        await host.wait()
    finally:
        poller.cancel()
        job.pushes.put_nowait(None)
        await pusher
        host.engine.shutdown_now()
    return 0


def run(argv: list[str] | None = None) -> int:
    return asyncio.run(main(parse(argv)))


if __name__ == "__main__":
    sys.exit(run())
