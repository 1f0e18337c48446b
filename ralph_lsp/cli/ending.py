"""How a run's or a queue's end reaches the terminal and beyond: the final line once (SPEC §7),
then ``--on-end CMD`` / ``ralph.onRunEnd`` (SPEC §9), whose word goes to stderr."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ralph_lsp.settings import Settings


def is_end_line(text: str, ended: list[str]) -> bool:
    """The engine's own ``■ <state>: <reason>`` line once the run has ended: the terminal prints
    the final line itself, once (SPEC §7)."""
    return bool(ended) and text.startswith(f"■ {ended[-1]}: ")


async def on_end(settings: Settings, event: Mapping[str, Any], root: Path) -> None:
    """Run ``--on-end CMD`` (``ralph.onRunEnd``) with a queue's ``event``; what it says goes to
    stderr, after the final line, so standard output's last line stays ``<state>: <reason>``."""
    from ralph_lsp.loop.on_end import notify

    await notify(settings.on_run_end, event, root, lambda text, level: _say(text))


def _say(text: str) -> None:
    print(f"ralph-lsp: {text}", file=sys.stderr)


def ends_to_stderr(engine: Any) -> None:
    """What the runs' ``--on-end`` commands say (their engine starts each as its run ends,
    ``loop/on_end.py``; the command awaits ``engine.ends_told()`` before it exits) goes to
    stderr, as :func:`on_end`'s, not among the run's lines."""
    engine.end_commands.say = lambda status, text, level: _say(text)


def spent(root: Path, run_id: str) -> str:
    """`` · $total · $x per task · $y on n iterations without progress`` of a recorded run."""
    from ralph_lsp.runs.costs import record_summary
    from ralph_lsp.runs.history import read_record

    text = record_summary(read_record(root, run_id) or {}).text()
    return f" · {text}" if text else ""
