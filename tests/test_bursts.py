"""The collector paused over a burst (ralph_lsp/bursts.py), and a program's imports loaded
without full collections: the thresholds and the collector's state are left as found, the
cyclic garbage made while loading is freed, and with ``freeze`` what survived is frozen until
collect_frozen collects it once."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from ralph_lsp.bursts import collect_frozen, collector_paused, loaded


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()


def test_loading_frees_the_cycles_it_made_and_leaves_the_thresholds_as_found() -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []

    def load() -> weakref.ref[_Node]:
        seen.append(gc.get_threshold())
        return weakref.ref(_Node())  # garbage as soon as it is made, as attrs leaves classes

    ref = loaded(load)
    assert seen[0][2] > before[2] * 1000  # no full collection while loading
    assert gc.get_threshold() == before
    assert ref() is None  # the young collection at the end freed the cycle
    assert gc.get_freeze_count() == 0


def test_loading_with_freeze_moves_what_survived_out_of_sight_until_collect_frozen() -> None:
    before = gc.get_threshold()
    holder: list[_Node] = []

    def load() -> weakref.ref[_Node]:
        holder.append(_Node())
        return weakref.ref(holder[0])

    ref = loaded(load, freeze=True)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() > 0
    holder.clear()  # garbage now, but frozen: no collection sees it
    gc.collect()
    assert ref() is not None
    assert collect_frozen() > 0  # what the server calls once it is up
    assert ref() is None
    assert gc.get_freeze_count() > 0  # what survived is frozen again
    assert collect_frozen() == 0  # once


def test_a_paused_burst_turns_the_collector_back_on_only_when_it_found_it_on() -> None:
    states: list[bool] = []
    burst = collector_paused(lambda: states.append(gc.isenabled()))
    burst()
    assert states == [False] and gc.isenabled()
    gc.disable()
    try:
        burst()
        assert not gc.isenabled()  # left off, as found
    finally:
        gc.enable()


def test_a_paused_burst_that_raises_still_turns_the_collector_back_on() -> None:
    @collector_paused
    def fails() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fails()
    assert gc.isenabled()
