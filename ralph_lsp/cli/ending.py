"""How a run's or a queue's end reaches the terminal and beyond: the final line once (SPEC §7),
then ``--on-end CMD`` / ``ralph.onRunEnd`` (SPEC §9), whose word goes to stderr."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def is_end_line(text: str, ended: list[str]) -> bool:
    """The engine's own ``■ <state>: <reason>`` line once the run has ended: the terminal prints
    the final line itself, once (SPEC §7)."""
    return bool(ended) and text.startswith(f"■ {ended[-1]}: ")


def _say(text: str) -> None:
    print(f"ralph-lsp: {text}", file=sys.stderr)


def ends_to_stderr(engine: Any, queue: Any = None) -> None:
    """What the ``--on-end`` commands of the runs (their engine starts each as its run ends,
    ``loop/on_end.py``) and of a queue (started as the queue ends) say goes to stderr, not among
    the run's lines, so standard output's last line stays ``<state>: <reason>``; the command
    awaits ``ends_told()`` (the engine's, or the queue's) before it exits."""
    engine.end_commands.say = lambda status, text, level: _say(text)
    if queue is not None:
        queue.say_end = lambda text, level: _say(text)


def spent(root: Path, run_id: str) -> str:
    """`` · $total · $x per task · $y on n iterations without progress`` of a recorded run."""
    from ralph_lsp.runs.costs import record_summary
    from ralph_lsp.runs.history import read_record

    text = record_summary(read_record(root, run_id) or {}).text()
    return f" · {text}" if text else ""
