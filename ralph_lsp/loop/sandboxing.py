"""A run's sandbox (SPEC §10), as the loop uses it: opened once the work tree is known (or
``off``, said as loudly), every spawn wrapped in it, and what it refused read from the output.

The decision of what a run may touch is ``sandbox/``'s; this module only meets it with the run:
its settings, its log, its status, and the ``SpawnSpec`` of each agent and check.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from ralph_lsp.agents.base import Refusal
from ralph_lsp.loop.states import RunState
from ralph_lsp.loop.status import Level, RunEnd
from ralph_lsp.proc.process import SpawnSpec
from ralph_lsp.sandbox import Sandbox, SandboxUnavailable
from ralph_lsp.sandbox.refusals import refused
from ralph_lsp.settings import Settings

OFF_LINE = (
    'sandbox: off (ralph.sandbox is "off"): the agent and the checks run with your full'
    " authority, network included"
)
REFUSAL_TOOL = "Sandbox"


def open_for(
    settings: Settings,
    work_root: Path,
    history_root: Path,
    log: Callable[[str, Level], None],
) -> Sandbox | None:
    """The run's sandbox, said in its log; None when ``ralph.sandbox`` is ``off``. A sandbox
    that cannot start ends the run before any agent is spawned (``RunEnd``)."""
    if settings.sandbox == "off":
        log(OFF_LINE, "warning")
        return None
    env: Mapping[str, str] = {**os.environ, **settings.env}
    try:
        box = Sandbox.open(
            work_root,
            preset=settings.agent,
            env=env,
            allow_write=settings.sandbox_allow_write,
            deny_read=settings.sandbox_deny_read,
            allowed_domains=settings.sandbox_allowed_domains,
            history_root=history_root,
        )
    except SandboxUnavailable as exc:
        raise RunEnd(RunState.FAILED, str(exc)) from None
    except OSError as exc:
        raise RunEnd(RunState.FAILED, f"the sandbox cannot start: {exc}") from None
    log(box.describe(), "info")
    return box


def wrap(spec: SpawnSpec, box: Sandbox | None) -> SpawnSpec:
    """``spec`` started inside ``box`` (unchanged without one)."""
    if box is None:
        return spec
    return replace(spec, env=box.environment(spec.env), wrapper=tuple(box.prefix(spec.cwd)))


def refusals_in(lines: Iterable[str]) -> list[Refusal]:
    """What the sandbox refused, as the output of a process inside it says."""
    found: list[Refusal] = []
    for line in lines:
        seen = refused(line)
        if seen is not None:
            found.append(Refusal(REFUSAL_TOOL, f"{seen[0]}: {seen[1]}"))
    return found
