"""One background pass over many items at a time (:class:`Sweep`): the server's passes over
every change's tasks.md (``publishing``) and over every OpenSpec item (``validation``), at start
and when folders or settings change.

A pass keeps the event loop at most :data:`SLICE_SECONDS` before letting the requests that came
meanwhile in, so with thousands of changes the server still answers; a new pass replaces the
one going on; a pass may first wait for another sweep to end (tasks.md's diagnostics and lenses
come before the specs'), without polling for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: The longest a pass keeps the event loop before letting requests in.
SLICE_SECONDS = 0.005

RunTask = Callable[[Coroutine[Any, Any, Any], str], "asyncio.Task[Any]"]


class Sweep(Generic[T]):
    """Passes of ``step`` over items, one at a time, in slices of the event loop; none while
    ``stopping()``. ``run_task`` starts and keeps the pass's task (the server's)."""

    def __init__(self, run_task: RunTask, stopping: Callable[[], bool], name: str) -> None:
        self._run_task = run_task
        self._stopping = stopping
        self._name = name
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """Whether a pass goes on."""
        return self._task is not None and not self._task.done()

    def start(
        self,
        items: Callable[[], Iterable[T]],
        step: Callable[[T], object],
        *,
        after: Sweep[Any] | None = None,
    ) -> None:
        """A pass of ``step`` over ``items()`` (listed when the pass begins: after the sweep
        ``after`` ended, when given), replacing the one going on."""
        if self._stopping():
            return
        if self._task is not None:
            self._task.cancel()
        self._task = self._run_task(self._pass(items, step, after), self._name)

    async def finished(self) -> None:
        """Once no pass goes on (one that replaced the pass waited for is waited for too)."""
        while self._task is not None and not self._task.done():
            await asyncio.wait({self._task})

    async def _pass(
        self,
        items: Callable[[], Iterable[T]],
        step: Callable[[T], object],
        after: Sweep[Any] | None,
    ) -> None:
        if after is not None:
            await after.finished()
        loop = asyncio.get_running_loop()
        until = loop.time() + SLICE_SECONDS
        for item in items():
            if self._stopping():
                return
            step(item)
            if loop.time() >= until:
                await asyncio.sleep(0)  # the requests that came meanwhile are served now
                until = loop.time() + SLICE_SECONDS
