"""What one run is asked for beyond its settings: :class:`RunRequest`, spelled out once.

A run's start arguments (its iteration cap, its scope, the guidance and the story it starts with,
the queue it belongs to, whether it follows up review comments) travel from a command (the CLI,
an editor's ``ralph.run``, a queue) to the engine through every host on the way:
``Engine.start``, ``Runs.start``, ``RayRuns.start``, ``RunHost``, a detached runner's command
line (``runner.client.spawn``) and a Ray job's entrypoint. Each takes the request whole, and
the command lines are written and read here (:meth:`RunRequest.argv`,
:meth:`RunRequest.add_arguments`, :meth:`RunRequest.from_args`), so a new start argument is
added in this one place. Imports nothing of the engine: the server's start path reaches it
through ``runner/client.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI's types only: the server's start does not load argparse
    import argparse


@dataclass(frozen=True)
class RunRequest:
    """One run's start arguments; ``None`` (or empty) means "as the settings say"."""

    max_iterations: int | None = None
    scope: str | None = None
    guidance: Sequence[str] = ()
    story: str | None = None
    # The queue a run belongs to (``{id, position, total}``), said in its status and record.
    queue: dict[str, Any] | None = field(default=None, compare=False)
    # A follow-up run (SPEC §12, review comments): the agent runs on the guidance even when every
    # task is checked already. Local runs only: a Ray run refuses one.
    follow_up: bool = False
    # A planning run (SPEC §14): the description of the change its agent drafts. Local runs
    # only: a Ray job never plans.
    plan: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "guidance", tuple(self.guidance))

    def argv(self, *, local: bool = True) -> list[str]:
        """The request as flags of a runner's (or a job's) command line. Every value is written
        as ``--flag=value``: guidance or a story starting with "-" stays a value. Without
        ``local`` (a Ray job's entrypoint) the queue and a follow-up, which stay here, are left
        out."""
        out: list[str] = []
        if self.max_iterations is not None:
            out.append(f"--max-iterations={self.max_iterations}")
        if self.scope is not None:
            out.append(f"--scope={self.scope}")
        out += [f"--guidance={text}" for text in self.guidance]
        if self.story is not None:
            out.append(f"--story={self.story}")
        if local and self.queue is not None:
            out.append(f"--queue={json.dumps(self.queue)}")
        if local and self.follow_up:
            out.append("--follow-up")
        if local and self.plan is not None:
            out.append(f"--plan={self.plan}")
        return out

    def sent_text(self) -> dict[str, Any]:
        """The free text a remote job carries (checked for secrets before it travels)."""
        return {
            "guidance": list(self.guidance),
            "story": self.story,
            "scope": self.scope,
            "plan": self.plan,
        }

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser, *, local: bool = True) -> None:
        """The flags :meth:`argv` writes, for the parser of the process that reads them."""
        parser.add_argument("--max-iterations", type=int)
        parser.add_argument("--scope")
        parser.add_argument("--guidance", action="append", default=[])
        parser.add_argument("--story")
        if local:
            parser.add_argument(
                "--queue", help="the queue the run belongs to: {id, position, total} as JSON"
            )
            parser.add_argument(
                "--follow-up", action="store_true", help="spawn on the guidance, tasks done"
            )
            parser.add_argument("--plan", help="a planning run: the change's description")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunRequest:
        """The request a command line written by :meth:`argv` carries."""
        queue = getattr(args, "queue", None)
        return cls(
            max_iterations=args.max_iterations,
            scope=args.scope,
            guidance=tuple(args.guidance or ()),
            story=args.story,
            queue=json.loads(queue) if queue else None,
            follow_up=bool(getattr(args, "follow_up", False)),
            plan=getattr(args, "plan", None),
        )


#: A run asked for nothing beyond its settings (the default of every ``start``).
AS_SETTINGS = RunRequest()
