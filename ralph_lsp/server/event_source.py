"""What happens in the server, as events (:class:`EventSource`): the closed set of things one
capability tells the others without knowing them (as esbonio's features meet through its
``EventSource``, and rust-analyzer's main loop takes a closed set of events).

- :class:`TasksChanged`: tasks.md files changed on disk (the root's watch saw them);
- :class:`SpecsChanged`: OpenSpec files changed on disk (specs, proposals, configuration);
- :class:`ChangesMoved`: change folders came or went at once (an archive in the editor);
- :class:`RunStatusChanged`: a run's status, as the engine or a followed runner told it (its
  end: a final status).

Handlers run synchronously, in the order they subscribed (``server.py`` builds the parts, and so
decides it); a handler that raises is logged and the others still run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ralph_lsp.runs.status import RunStatus

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunStatusChanged:
    """A run's status."""

    status: RunStatus


@dataclass(frozen=True)
class _Files:
    paths: frozenset[Path]


class TasksChanged(_Files):
    """tasks.md files changed on disk."""


class SpecsChanged(_Files):
    """OpenSpec files changed on disk."""


@dataclass(frozen=True)
class ChangesMoved:
    root: Path


Event = TasksChanged | SpecsChanged | ChangesMoved | RunStatusChanged
E = TypeVar("E", TasksChanged, SpecsChanged, ChangesMoved, RunStatusChanged)


class EventSource:
    """Subscribe with :meth:`on`, tell with :meth:`emit`."""

    def __init__(self) -> None:
        self._handlers: dict[type[Any], list[Callable[[Any], None]]] = {}

    def on(self, kind: type[E], handler: Callable[[E], None]) -> None:
        self._handlers.setdefault(kind, []).append(handler)

    def emit(self, event: Event) -> None:
        for handler in self._handlers.get(type(event), ()):
            try:
                handler(event)
            except Exception:
                log.exception("a handler of %s failed", type(event).__name__)
