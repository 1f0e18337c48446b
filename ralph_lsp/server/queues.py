"""Queues in the server (SPEC §9): ``ralph.run`` with ``changes``, ``ralph.stopQueue``,
``ralph.queues`` and the ``ralph/queueStatus`` notification; what a queue's ``ralph.onRunEnd``
says goes to the log (the queue starts it as it ends, after its runs': ``loop/on_end.py``). The
queue itself is the domain's (``loop/queue.py``); this only translates.

The queue (``loop/queue.py``: the engine, git) is imported when a queue is started or listed:
the server's start path, which discovers and follows live queues, imports no engine.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ralph_lsp.placement import in_own_runner
from ralph_lsp.runner.client import QueueAttachment, RunnerError, spawn_queue
from ralph_lsp.runner.live import read_live
from ralph_lsp.runner.queue_live import find_live_queues, queue_live_path, take_ended_queues
from ralph_lsp.runs.status import EngineError
from ralph_lsp.server import args
from ralph_lsp.server.errors import InvalidArguments, RequestFailed
from ralph_lsp.server.logs import LEVELS
from ralph_lsp.server.session import Session
from ralph_lsp.settings import Settings

if TYPE_CHECKING:  # imported when a queue starts: the server's start path imports no engine
    from ralph_lsp.loop.queue import Queue, QueueEvent, QueueOptions

QUEUE_STATUS = "ralph/queueStatus"
Obj = dict[str, Any]


class Queues:
    """The server's live queues."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.live: dict[str, Queue] = {}
        # Queues in runners of their own (ralph.runsOutliveEditor): followed, not owned.
        self.attached: dict[str, QueueAttachment] = {}

    async def start(self, root: Path, names: list[str], obj: Obj, settings: Settings) -> Obj:
        """Start a queue of ``names`` (the caller checked trust and got ``settings``)."""
        cmd = "ralph.run"
        parallel = args.positive_int(cmd, obj, "parallel")
        stop_on_failure = obj.get("stopOnFailure")
        if stop_on_failure is not None and not isinstance(stop_on_failure, bool):
            raise InvalidArguments(f'{cmd}: "stopOnFailure" must be true or false')
        from ralph_lsp.loop.queue import Queue, QueueOptions

        options = QueueOptions.of(settings, parallel=parallel, stop_on_failure=stop_on_failure)
        if in_own_runner(settings):
            return await self._start_runner(root, names, settings, options)
        queue = Queue(self.session.engine, root, names, settings, options, self._on_event)
        queue.say_end = self._say
        status = await queue.start()  # EngineError (refused before anything starts) answers
        self.live[queue.id] = queue
        self.session.run_task(self._follow(queue), f"queue {queue.id}")
        return status

    async def _start_runner(
        self, root: Path, names: list[str], settings: Settings, options: QueueOptions
    ) -> Obj:
        """The queue in a runner of its own, which outlives this server (and runs the
        onRunEnd commands of its runs and its own end); this server follows it."""
        opts = {
            "parallel": options.parallel,
            "stop_on_failure": options.stop_on_failure,
            "max_cost_usd": options.max_cost_usd,
        }
        try:
            spawned = await spawn_queue(root, names, settings, opts)
        except RunnerError as exc:
            raise EngineError(str(exc)) from None
        self.session.run_task(spawned.process.wait(), f"reap queue {spawned.queue_id}")
        live = read_live(queue_live_path(root, spawned.queue_id))
        if live is not None:
            with contextlib.suppress(RunnerError, OSError):
                await self._attach(live)
        return spawned.status

    async def attach_all(self, roots: list[Path]) -> None:
        """Follow the live queues of ``roots``; tell the queues that ended unwatched."""
        for root in roots:
            for live in await asyncio.to_thread(find_live_queues, root):
                if live.run_id not in self.attached:
                    with contextlib.suppress(RunnerError, OSError):
                        await self._attach(live)
            self._tell_ended(root)

    async def _attach(self, live: Any) -> None:
        attached = QueueAttachment(live, self.session.engine.feed, self._on_status)
        await attached.open(editor=True)
        self.attached[live.run_id] = attached
        self.session.run_task(self._follow_runner(live.run_id, live.root, attached), "follow queue")
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(attached.first_queue.wait(), 10.0)

    async def _follow_runner(self, queue_id: str, root: Path, attached: QueueAttachment) -> None:
        await attached.closed
        if self.attached.get(queue_id) is attached:
            del self.attached[queue_id]
        last = attached.queue_status
        if last is None or not last.get("endedAt"):  # hung up without its end: it died
            await asyncio.to_thread(find_live_queues, root)
            self._tell_ended(root)

    def _tell_ended(self, root: Path) -> None:
        for status in take_ended_queues(root):
            self._on_status(status)

    def _on_status(self, status: Obj) -> None:
        self.session.notify(QUEUE_STATUS, status)

    async def _follow(self, queue: Queue) -> None:
        await queue.wait()
        self.live.pop(queue.id, None)
        await queue.ends_told()  # its runs' onRunEnd commands, then its own

    def _on_event(self, event: QueueEvent) -> None:
        self.session.notify(QUEUE_STATUS, event.status)

    def _say(self, text: str, level: str) -> None:
        self.session.logs.add(text, LEVELS.get(level, types.MessageType.Info))

    async def stop(self, obj: Obj) -> Obj:
        cmd = "ralph.stopQueue"
        wanted = args.optional_string(cmd, obj, "queue")
        root_arg = args.optional_string(cmd, obj, "root")
        root = self.session.resolve_root(cmd, root_arg) if root_arg else None
        found = [
            q
            for q in self.live.values()
            if (wanted is None or q.id == wanted) and (root is None or q.root == root)
        ]
        if not found:
            for qid, attached in list(self.attached.items()):
                if (wanted is None or qid == wanted) and (
                    root is None or attached.live.root == root
                ):
                    try:
                        reply = await attached.send({"type": "stop"}, 60.0)
                    except (RunnerError, asyncio.TimeoutError) as exc:
                        raise RequestFailed(f"queue {qid!r} cannot be stopped: {exc}") from None
                    status = reply.get("status") or {}
                    return {
                        **status,
                        "stopped": reply.get("stopped", []),
                        "dropped": reply.get("dropped", []),
                    }
        if not found:
            raise RequestFailed(
                f"queue {wanted!r} is not running" if wanted else "no queue is running"
            )
        queue = found[0]
        stopped = [i.change for i in queue.items if i.state == "running"]
        dropped = await queue.stop()
        return {"queueId": queue.id, "stopped": stopped, "dropped": dropped, **queue.to_json()}

    async def listing(self, obj: Obj) -> Obj:
        cmd = "ralph.queues"
        root_arg = args.optional_string(cmd, obj, "root")
        roots = [self.session.resolve_root(cmd, root_arg)] if root_arg else self.session.roots.roots
        live = [q.to_json() for q in self.live.values() if q.root in roots]
        live += [
            a.queue_status
            for a in self.attached.values()
            if a.queue_status is not None and a.live.root in roots
        ]
        ids = {q["queueId"] for q in live}
        from ralph_lsp.loop.queue import load_queues

        recorded: list[Obj] = []
        for root in roots:
            found = await asyncio.to_thread(load_queues, root)
            recorded.extend(q for q in found if q.get("queueId") not in ids)
        return {"queues": live + recorded}


def changes_of(obj: Obj) -> list[str] | None:
    """``changes`` of ``ralph.run``: a non-empty list of names, or None when absent."""
    value = obj.get("changes")
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise InvalidArguments(
            f'ralph.run: "changes" must be a non-empty list of change names, got {args.kind(value)}'
        )
    if "change" in obj:
        raise InvalidArguments(
            'ralph.run: send "change" (one run) or "changes" (a queue), not both'
        )
    return list(value)
