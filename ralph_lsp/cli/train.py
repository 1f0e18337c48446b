"""The merge train for the terminal: ``merge --all`` and ``run … --merge`` (SPEC §12)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ralph_lsp.cli.common import CliError
from ralph_lsp.settings import Settings

if TYPE_CHECKING:
    from ralph_lsp.merging.train import TrainResult


def sayer(stream: TextIO) -> Any:
    def say(text: str) -> None:
        print(text, file=stream, flush=True)

    return say


async def run_train(
    root: Path,
    settings: Settings,
    into: str | None,
    strategy: Any,
    say: Any,
    run_ids: list[str] | None = None,
) -> TrainResult:
    from ralph_lsp.git.merge import MergeError
    from ralph_lsp.merging.train import merge_train

    try:
        return await merge_train(root, settings, say, into=into, strategy=strategy, run_ids=run_ids)
    except MergeError as exc:
        raise CliError(str(exc)) from None


@contextmanager
def stop_on_signals() -> Iterator[asyncio.Event]:
    """An event set by Ctrl-C or SIGTERM: the verification running stops (its whole tree), the
    target is not moved, and the scratch worktree is removed, as when it fails."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def train_summary(train: TrainResult) -> str:
    rows = [
        f"{'✓' if o.state == 'merged' else '✗'} {o.change}: {o.state}: {o.reason}"
        for o in train.outcomes
    ]
    return "\n".join(["", *rows, train.summary()])


def train_exit(train: TrainResult) -> int:
    states = {o.state for o in train.outcomes}
    if "needs-review" in states:
        return 1
    return 3 if "refused" in states else 0


async def run_train_after(
    root: Path, status: dict[str, Any], settings: Settings, out: TextIO, code: int
) -> int:
    """``run … --merge``: the train over the queue's succeeded runs, in queue order, once the
    queue has ended; the exit code is the queue's when it did not succeed, else the train's."""
    ids = [str(i["runId"]) for i in status["items"] if i["state"] == "succeeded" and i["runId"]]
    print("\nmerging the queue's succeeded runs (merge train):", file=out, flush=True)
    train = await run_train(root, settings, None, "merge", sayer(out), ids)
    print(train_summary(train), file=out)
    return code or train_exit(train)
