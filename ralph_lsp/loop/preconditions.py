"""What must hold before a run starts, or no run starts and nothing is recorded: the one place
every front end and host asks.

- :func:`refusal`: the run as set up can be made here: worktree isolation needs a git work tree
  with a commit (SPEC §8), a budget must be one the agent lets us enforce (SPEC §3), and no
  sandbox means no run (SPEC §10, fail closed). ``Engine.start`` asks it for every run, whoever
  started it; the terminal asks it too before it hands a run to a runner of its own
  (``run --detach``), so that the refusal is its usage error, not the runner's.
- :func:`program_refusal`: the agent program exists and is executable. The terminal asks it
  before a run or a queue starts (SPEC §7: one line on stderr, exit 2, no record). The editor
  does not: there a missing program is the run's own outcome, ``failed`` after at most two
  spawns (SPEC §4's states), kept in its history where the operator looks.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from ralph_lsp.loop import budget, sandboxing
from ralph_lsp.loop import run_git as rungit
from ralph_lsp.sandbox import refusal as sandbox_refusal
from ralph_lsp.settings import Settings


async def refusal(root: Path, settings: Settings) -> str | None:
    """Why a run of ``settings`` cannot start in ``root`` (git, budget, sandbox), or None."""
    reason = await rungit.refusal(root, settings)
    reason = reason or budget.refusal_at(settings, root)
    if reason is None:  # the sandbox is probed last: it may start a program to find out
        reason = await asyncio.to_thread(sandbox_refusal, sandboxing.mode(settings)[0])
    return reason


def program_refusal(settings: Settings, root: Path) -> str | None:
    """Why the agent program of ``settings`` cannot be started in ``root`` (not set, not found,
    not executable, on the agent's ``PATH``), or None."""
    from ralph_lsp.agents import agent_program
    from ralph_lsp.proc.process import AgentStartError, resolve_program

    try:
        program = agent_program(settings, root)
        resolve_program(program, settings.env.get("PATH", os.environ.get("PATH")), root)
    except (ValueError, AgentStartError) as exc:
        return str(exc)
    return None
