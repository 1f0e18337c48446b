"""A burst of allocations with the cyclic garbage collector paused (:func:`collector_paused`),
and a program's imports without its full collections (:func:`loaded`).

The tasks.md parse, a spec's validation and a cold scan of test files each make an object or
more per line, task or file, and no reference cycle. The cyclic collector, which these
allocations would set off again and again (each pass walking the young objects, a full one the
whole heap of a process holding a language server's state), is paused while one runs and
catches up once afterwards. Measured: 1.5 of 21 ms of a 1 MiB tasks.md, 30-90 ms of a
10,000-requirement spec's 110-200, 2.4 of 38 ms of the conformance table over 5,000 test files.
"""

from __future__ import annotations

import functools
import gc

TYPE_CHECKING = False  # typing's constant without importing typing: `validate` never loads it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import ParamSpec, TypeVar

    P = ParamSpec("P")
    R = TypeVar("R")


def loaded(load: Callable[[], R], *, freeze: bool = False) -> R:
    """``load()`` (a program's imports) with only the young collections running. The imports
    of a language server (lsprotocol's hundreds of attrs classes) set off full collections that
    walk the growing heap again and again: about 18 of 255 ms to initialize. Pausing
    the collector altogether would keep the garbage attrs leaves (each class it rebuilt: 8 MiB
    of cycles) until one 40 ms collection; the young ones free it as it is made. With
    ``freeze`` (the server, once), what survived is moved out of the collector's sight: it lives
    as long as the process, and no later collection walks it again."""
    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, 1 << 30)
    try:
        return load()
    finally:
        gc.collect(1)
        gc.set_threshold(young, middle, full)
        if freeze:
            gc.freeze()


def collector_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` with the cyclic collector paused while it runs (left as it was found: a call
    inside another paused one does not turn it back on)."""

    @functools.wraps(fn)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        collecting = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if collecting:
                gc.enable()

    return paused
