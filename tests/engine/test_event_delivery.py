"""What every emitter of run events shares (runs/status.py): a renderer's bug is logged and
swallowed, followers' tasks are held until they end, and a second run of a change is refused in
one wording."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from ralph_lsp.runs.status import already_running, deliver, keep_task

LOG = logging.getLogger("tests.event_delivery")


def test_a_renderers_bug_is_logged_and_the_emitter_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[int] = []

    def renderer(event: int) -> None:
        seen.append(event)
        if event == 2:
            raise RuntimeError("renderer bug")

    with caplog.at_level(logging.ERROR, logger=LOG.name):
        for event in (1, 2, 3):
            deliver(renderer, event, LOG, "run event handler failed")
        deliver(None, 4, LOG, "run event handler failed")  # nobody renders: nothing happens
    assert seen == [1, 2, 3]
    [record] = caplog.records
    assert (record.name, record.getMessage()) == (LOG.name, "run event handler failed")
    assert record.exc_info is not None and "renderer bug" in str(record.exc_info[1])


def test_a_kept_task_is_held_until_it_ends() -> None:
    async def main() -> tuple[bool, bool, str]:
        tasks: set[asyncio.Task[Any]] = set()
        release = asyncio.Event()

        async def follower() -> str:
            await release.wait()
            return "done"

        task = keep_task(tasks, follower())
        await asyncio.sleep(0)
        held = task in tasks
        release.set()
        result = await task
        await asyncio.sleep(0)  # the done callbacks run
        return held, task in tasks, result

    assert asyncio.run(main()) == (True, False, "done")


def test_a_second_run_is_refused_in_one_wording() -> None:
    here = already_running("alpha", "r1", 3)
    assert str(here) == "change 'alpha' is already running (run r1, iteration 3); stop it first"
    there = already_running("alpha", "r1", 3, pid=42)
    assert str(there) == (
        "change 'alpha' is already running in another ralph-lsp process"
        " (pid 42, run r1, iteration 3); stop it first"
    )
