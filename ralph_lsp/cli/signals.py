"""Ctrl-C and ``SIGTERM`` for a command that drives runs in this process (``run``, ``run --all``
and queues): the first signal says so and stops gracefully, a second one kills at once."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on_signals(
    what: str, say: Callable[[str], None], stop: Callable[[], None], kill: Callable[[], None]
) -> Iterator[None]:
    """While inside: the first ``SIGINT``/``SIGTERM`` says ``"<SIGNAME>: stopping the <what>
    (again to kill at once)"`` and calls ``stop``; every later one calls ``kill``. The handlers
    are on the running event loop, and on the way out the ones before them are back.

    A signal this process was started ignoring stays ignored: a command started in the
    background without job control (``ralph-lsp run … &`` from a script) has ``SIGINT``
    ignored, so that a Ctrl-C meant for the terminal's foreground job does not stop it."""
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal(signame: str) -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            say(f"{signame}: stopping the {what} (again to kill at once)")
            stop()
        else:
            kill()

    before = {sig: signal.getsignal(sig) for sig in SIGNALS}
    handled = [sig for sig in SIGNALS if before[sig] is not signal.SIG_IGN]
    for sig in handled:
        loop.add_signal_handler(sig, on_signal, sig.name)
    try:
        yield
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)  # which sets SIGINT's default, not the one before
            previous = before[sig]
            if previous is not None:
                signal.signal(sig, previous)
