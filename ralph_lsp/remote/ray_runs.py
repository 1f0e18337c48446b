"""RayRuns: runs executed as Ray jobs, with the surface of :class:`~ralph_lsp.runner.runs.Runs`
(start, wait, stop, guide, statuses), so a :class:`~ralph_lsp.loop.queue.Queue`, the CLI and the
server drive them as they drive local runs.

``start`` refuses a work tree with uncommitted changes (the job would not see them), pushes
``HEAD`` to the run branch ``ralph/<change>/<runId>`` of ``ralph.ray.gitRemote`` (default:
``origin``), and submits ``python -m ralph_lsp.remote.job …`` with the run's entrypoint
resources. The job's log is the run's event stream: each event is re-rooted to the local
change (its run id is the local one), given to the callback, and written to the local
``.ralph/runs/<runId>/record.json``; each iteration's commit is fetched back and named by a
local checkpoint ref, so ``ralph-lsp diff``, the history page and restore work. A job whose log
ends without the run's end ends the run ``interrupted`` with the job's own reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ralph_lsp.git import GitError
from ralph_lsp.git import remote as gr
from ralph_lsp.loop.engine import EngineError, EngineEvent, LogEvent, RunStatus, StatusEvent
from ralph_lsp.loop.on_end import EndCommands
from ralph_lsp.openspec.workspace import resolve_change
from ralph_lsp.remote.remote_run import RemoteRun, check_env, entrypoint, plan_push
from ralph_lsp.remote.secrets import redact
from ralph_lsp.runner import events
from ralph_lsp.runs.claims import ChangeBusy, ChangeClaim
from ralph_lsp.runs.events import (
    CheckpointEvent,
    EndEvent,
)
from ralph_lsp.runs.history import new_run_id
from ralph_lsp.runs.request import AS_SETTINGS, RunRequest
from ralph_lsp.runs.states import RunState
from ralph_lsp.runs.status import deliver, keep_task, now_iso
from ralph_lsp.settings import Settings

log = logging.getLogger(__name__)
Key = tuple[Path, str]
STOP_GRACE_SECONDS = 30.0  # a cooperative stop's wait for the run's end before the job's stop


def job_client(address: str | None) -> Any:
    """Ray's JobSubmissionClient (Ray imported here, and only here)."""
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        raise EngineError(
            "ralph.runner 'ray' needs Ray on this machine: pip install 'ralph-lsp[ray]'"
        ) from None
    try:
        return JobSubmissionClient(address)
    except Exception as exc:  # Ray raises plain exceptions for an unreachable address
        raise EngineError(
            f"the Ray cluster at {address or 'RAY_ADDRESS'} answers not: {exc}"
        ) from None


NOT_READY = "No available agent to submit job"  # a head whose job agent has not registered yet
SUBMIT_PATIENCE_SECONDS = 30.0


async def submit_job(client: Any, submit: dict[str, Any]) -> str:
    """``submit_job``; a cluster that has just started (its job agent not registered yet) is
    asked again for :data:`SUBMIT_PATIENCE_SECONDS`; any other refusal is said at once."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SUBMIT_PATIENCE_SECONDS
    delay = 0.5
    while True:
        try:
            return str(await asyncio.to_thread(client.submit_job, **submit))
        except Exception as exc:
            if NOT_READY not in str(exc) or loop.time() + delay > deadline:
                raise EngineError(f"Ray refused the job: {exc}") from None
        await asyncio.sleep(delay)
        delay = min(delay * 2, 4.0)


def final_status(status: RunStatus, end: EndEvent) -> RunStatus:
    """``status`` ended as ``end`` says (``failed`` when its state is not one this side knows)."""
    st = status.copy()
    try:
        st.state = RunState(end.state)
    except ValueError:
        st.state = RunState.FAILED
    st.reason, st.updated_at, st.phase = end.reason, now_iso(), None
    return st


class RayRuns:
    """See the module's docstring; ``address`` overrides ``ralph.ray.address``."""

    def __init__(
        self, on_event: Callable[[EngineEvent], None] | None = None, address: str | None = None
    ) -> None:
        self._on_event = on_event
        self._address = address
        self._runs: dict[Key, RemoteRun] = {}
        self._clients: dict[str | None, Any] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        # Awaited between the job's events: a host holds the following back while one of its
        # subscribers is slow (the job's log waits on the cluster meanwhile; nothing is lost).
        self.pace: Callable[[], Awaitable[None]] | None = None
        # ralph.onRunEnd runs here, on the operator's machine (never sent to the job)
        self.end_commands = EndCommands(self._emit)
        self.ends_told = self.end_commands.settled  # RunService's: once they have ended
        self._end_argv: dict[str, tuple[str, ...] | None] = {}  # run id → its onRunEnd

    def _emit(self, event: EngineEvent) -> None:
        deliver(self._on_event, event, log, "run event handler failed")

    def _client(self, address: str | None) -> Any:
        if address not in self._clients:
            self._clients[address] = job_client(address)
        return self._clients[address]

    async def start(
        self,
        root: Path,
        change: str,
        settings: Settings,
        request: RunRequest = AS_SETTINGS,
    ) -> RunStatus:
        if request.follow_up:
            raise EngineError("a follow-up run (review comments) runs here, not on Ray")
        resolved = resolve_change(root, change)  # UnknownChangeError for unknown names
        key = (resolved.root, resolved.name)
        current = self._runs.get(key)
        if current is not None and not current.status.final:
            raise EngineError(f"change {change!r} is already running as Ray job {current.job_id}")
        check_env(settings, request.sent_text())
        address = self._address or settings.ray_address
        client = await asyncio.to_thread(self._client, address)
        run_id = new_run_id()
        try:  # one run per change on the machine, wherever it executes
            claim = ChangeClaim.take(*key, run_id)
        except ChangeBusy as exc:
            raise EngineError(str(exc)) from None
        try:
            run = await self._submit(key, run_id, client, settings, request)
        except BaseException:
            claim.release()
            raise
        run.claim = claim
        self._runs[key] = run
        where = f"branch {run.plan.branch} of {run.plan.shown}"
        self._emit(LogEvent(*key, f"☁ Ray job {run.job_id} · {where}"))
        self._emit(StatusEvent(run.status.copy()))
        run.history.save(run.record())
        self._end_argv[run_id] = settings.on_run_end
        run.task = keep_task(self._tasks, self._follow(run, client))
        return run.status.copy()

    async def _submit(
        self,
        key: Key,
        run_id: str,
        client: Any,
        settings: Settings,
        request: RunRequest,
    ) -> RemoteRun:
        """Push the run's base, then submit its job."""
        try:
            plan = await asyncio.to_thread(plan_push, *key, settings, run_id)
        except GitError as exc:
            raise EngineError(f"the run's base could not be pushed: {redact(str(exc))}") from None
        run = RemoteRun(*key, plan, request.queue)
        command = entrypoint(plan, key[1], settings, request)
        res = settings.ray_resources
        submit: dict[str, Any] = {"entrypoint": command, "submission_id": f"ralph-{plan.run_id}"}
        if "cpus" in res:
            submit["entrypoint_num_cpus"] = res["cpus"]
        if "memoryMb" in res:
            submit["entrypoint_memory"] = int(res["memoryMb"] * 1024 * 1024)
        run.job_id = await submit_job(client, submit)
        return run

    # Long: one loop over the job's log, then the end the log did not tell.
    async def _follow(self, run: RemoteRun, client: Any) -> None:
        try:
            await self._read_log(run, client)
            if not run.status.final:
                await self._interrupted(run, client)
            with contextlib.suppress(GitError, OSError):
                await asyncio.to_thread(run.fetch_back)
            run.history.save(run.record())
        finally:
            if run.claim is not None:
                run.claim.release()
            if run.status.final:  # its final status is out: then its onRunEnd
                argv = self._end_argv.pop(run.status.run_id, None)
                self.end_commands.run_ended(argv, run.status.copy())

    async def _read_log(self, run: RemoteRun, client: Any) -> None:
        pending = ""
        try:
            async for chunk in client.tail_job_logs(run.job_id):
                pending += chunk
                *lines, pending = pending.split("\n")
                for line in lines:
                    await self._line(run, line)
            if pending:
                await self._line(run, pending)
        except Exception as exc:  # the log's connection broke: the job's status says more
            log.warning("the log of Ray job %s broke off: %s", run.job_id, exc)

    async def _line(self, run: RemoteRun, line: str) -> None:
        event = events.loads(line) if line.startswith("{") else None
        if event is None:
            if line.strip():
                self._emit(LogEvent(run.root, run.change, line.rstrip()))
            return
        event = run.local(event)
        if isinstance(event, LogEvent) and event.text.startswith("⎇ "):
            return  # the job's own worktree and branch on its node: told as seen from here
        if isinstance(event, EndEvent) and not run.status.final:
            # A job that ended before its run started (no agent on the node, no clone) tells
            # only its end: the run's final status is that end's state and reason.
            await self._take(run, StatusEvent(final_status(run.status, event)))
        await self._take(run, event)

    async def _take(self, run: RemoteRun, event: EngineEvent) -> None:
        if isinstance(event, StatusEvent) and event.status.final:
            await self._told_where(run)
        run.take(event)
        if isinstance(event, CheckpointEvent) and event.checkpoint:
            with contextlib.suppress(GitError, OSError):
                await asyncio.to_thread(run.fetch_back)
        self._emit(event)
        if self.pace is not None:
            await self.pace()

    async def _told_where(self, run: RemoteRun) -> None:
        """Before the end: the branch fetched back, and how to review and merge it from here."""
        if run.told_where:
            return
        run.told_where = True
        try:
            await asyncio.to_thread(run.fetch_back)
        except (GitError, OSError) as exc:
            why = redact(str(exc))
            self._emit(LogEvent(run.root, run.change, f"the run branch was not fetched: {why}"))
            return
        local, n = run.fetched_ref, len(run.iterations)
        self._emit(LogEvent(run.root, run.change, (
            f"⎇ the run's work is on branch {run.plan.branch} of {run.plan.shown} ({n} iteration"
            f" commit(s); nothing was merged), fetched here as {local}: review it with"
            f" `git log -p HEAD..{local}` or `git diff HEAD...{local}`, merge it with"
            f" `git merge {local}`"
        )))  # fmt: skip

    async def _interrupted(self, run: RemoteRun, client: Any) -> None:
        why = "its log ended"
        with contextlib.suppress(Exception):
            info = await asyncio.to_thread(client.get_job_info, run.job_id)
            why = f"the job is {info.status}" + (f": {info.message}" if info.message else "")
        st = run.status.copy()
        st.state = RunState.INTERRUPTED
        st.reason = f"the Ray job's runner ended without ending the run ({why})"
        st.updated_at = now_iso()
        st.phase = None
        await self._told_where(run)
        for event in (
            LogEvent(run.root, run.change, f"✗ {st.reason}", "error"),
            StatusEvent(st),
            EndEvent(run.root, run.change, run.plan.run_id, str(st.state), st.reason),
        ):
            run.take(event)
            self._emit(event)

    # -- control -----------------------------------------------------------------------------
    def _find(self, root: Path, change: str) -> RemoteRun:
        run = self._runs.get((root, change))
        if run is None or run.status.final:
            raise EngineError(f"change {change!r} is not running")
        return run

    async def stop(self, root: Path, change: str) -> RunStatus:
        """Ask the job to stop its run (a stop ref); the job's stop if it has not ended soon."""
        run = self._find(root, change)
        self._emit(LogEvent(root, change, "■ stop requested: asking the Ray job to stop the run"))
        plan = run.plan
        try:
            note = await asyncio.to_thread(gr.write_note, plan.repo, "stop")
            ref = gr.stop_ref(change, plan.run_id)
            await asyncio.to_thread(gr.push, plan.repo.top, plan.url, note, ref)
        except GitError as exc:
            log.warning("the stop ref could not be pushed: %s", exc)
        assert run.task is not None
        done, _ = await asyncio.wait({run.task}, timeout=STOP_GRACE_SECONDS)
        if not done:
            client = self._client(self._address)
            with contextlib.suppress(Exception):
                await asyncio.to_thread(client.stop_job, run.job_id)
            await asyncio.shield(run.task)
        return run.status.copy()

    async def guide(self, root: Path, change: str, text: str) -> None:
        """Guidance k as ``refs/ralph/guidance/<change>/<runId>/<k>`` on the remote."""
        run = self._find(root, change)
        plan = run.plan
        try:
            note = await asyncio.to_thread(gr.write_note, plan.repo, text)
            ref = gr.guidance_prefix(change, plan.run_id) + str(run.guided)
            await asyncio.to_thread(gr.push, plan.repo.top, plan.url, note, ref)
        except GitError as exc:
            raise EngineError(f"the guidance could not be pushed: {exc}") from None
        run.guided += 1
        self._emit(LogEvent(root, change, "✎ guidance sent to the Ray job for its next iteration"))

    # -- what the server reads -------------------------------------------------------------------
    def statuses(self, root: Path | None = None, change: str | None = None) -> list[RunStatus]:
        return [
            run.status.copy()
            for key, run in sorted(self._runs.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))
            if (root is None or key[0] == root) and (change is None or key[1] == change)
        ]

    def active_count(self) -> int:
        return sum(1 for r in self._runs.values() if not r.status.final)

    async def wait(self, root: Path, change: str) -> RunStatus:
        run = self._runs.get((root, change))
        if run is None:
            raise EngineError(f"change {change!r} has not run")
        if run.task is not None:
            await asyncio.shield(run.task)
        return run.status.copy()

    async def shutdown(self, reason: str | None = None) -> None:
        """Stop the runs still going (each as ``stop`` does: the job asked first, then stopped
        by the engine), then stop following."""
        going = [key for key, run in self._runs.items() if not run.status.final]
        await asyncio.gather(*(self.stop(*key) for key in going), return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def shutdown_now(self) -> None:
        """Stop following at once; a job still going goes on (its branch keeps its work)."""
        for task in list(self._tasks):
            task.cancel()

    def unfinished(self) -> list[RunStatus]:
        return [r.status.copy() for r in self._runs.values() if not r.status.final]
