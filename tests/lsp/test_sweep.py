"""The server's passes over many items (``server/sweep.py``): one at a time, in slices of the
event loop, the specs' pass only once tasks.md's has ended, a replaced pass included."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ralph_lsp.server import sweep
from ralph_lsp.server.sweep import Sweep


def _run_task(tasks: list[asyncio.Task[Any]]) -> Any:
    def run(coro: Any, name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        tasks.append(task)
        return task

    return run


async def test_a_pass_after_another_waits_for_it_and_for_the_one_that_replaced_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sweep, "SLICE_SECONDS", 0.0)  # every step yields
    tasks: list[asyncio.Task[Any]] = []
    done: list[str] = []
    first: Sweep[int] = Sweep(_run_task(tasks), lambda: False, "tasks.md")
    then: Sweep[int] = Sweep(_run_task(tasks), lambda: False, "specs")
    first.start(lambda: range(20), lambda i: done.append(f"a{i}"))
    then.start(lambda: range(3), lambda i: done.append(f"spec{i}"), after=first)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    first.start(lambda: range(5), lambda i: done.append(f"b{i}"))  # replaces the first pass
    assert first.running and then.running
    await asyncio.gather(*tasks, return_exceptions=True)
    assert tasks[0].cancelled() and not first.running and not then.running
    assert done[-3:] == ["spec0", "spec1", "spec2"]  # after every step of both tasks.md passes
    assert [d for d in done if d.startswith("b")] == [f"b{i}" for i in range(5)]
    assert len([d for d in done if d.startswith("a")]) < 20  # the replaced pass stopped


async def test_no_pass_while_stopping_and_a_pass_stops_with_the_server() -> None:
    tasks: list[asyncio.Task[Any]] = []
    stopping = [True]
    done: list[int] = []
    passes: Sweep[int] = Sweep(_run_task(tasks), lambda: stopping[0], "tasks.md")
    passes.start(lambda: range(3), done.append)
    assert tasks == [] and not passes.running
    stopping[0] = False

    def step(i: int) -> None:
        done.append(i)
        stopping[0] = i == 1  # the server stops during the second step

    passes.start(lambda: range(5), step)
    await asyncio.gather(*tasks)
    assert done == [0, 1]
