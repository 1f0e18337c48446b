"""The reviewer's invocation of each preset (SPEC §13 "Review"): read-only tool permissions.

The reviewer judges and does not build; what confines it is the host's sandbox (the work tree
read-only but the task files) or, with the sandbox off, the host's undo of every write outside
the task files. The preset's own permissions say the same to the CLI, so that a reviewer does
not spend its turns on tools it may not use:

- ``claude``: ``--permission-mode dontAsk`` with ``--allowedTools`` limited to reading (``Read``,
  ``Grep``, ``Glob``, ``LS``, git's ``diff``/``log``/``show``) and ``Edit`` of the task files
  only (``Edit(//<absolute path>)``); anything else is refused without asking;
- ``codex``: ``-C <the change's folder>``: its own workspace sandbox, when it is not standing
  down inside ours, lets it write only there (it reads everywhere);
- ``gemini``: no shell command is allowed (its policy file allows none), edits as usual;
- ``demo``: the demo agent reviews deterministically (``demo/reviewer.py``);
- a command (``ralph.review.agent`` as argv): used as written, ``{model}`` replaced.

``model`` (``ralph.review.model``) goes to the preset's ``--model``. Builds argv; starts nothing.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.agents import Invocation, build_invocation
from ralph_lsp.settings import Settings, model_for

READ_TOOLS = (
    "Read",
    "Grep",
    "Glob",
    "LS",
    "Bash(git diff:*)",
    "Bash(git log:*)",
    "Bash(git show:*)",
)


@dataclass(frozen=True)
class Reviewer:
    """Who reviews: a preset (``agent``) or a command (``command``, with the plain parser
    unless it is the run's own agent command), and the name the record gives it."""

    agent: str
    command: tuple[str, ...] | None
    name: str
    model: str | None


def reviewer_of(settings: Settings) -> Reviewer | None:
    """The reviewer ``settings`` name, or None when ``ralph.review.agent`` is not set."""
    chosen = settings.review_agent
    # ralph.review.model, else the review phase's of ralph.models (SPEC §13, §15)
    model = settings.review_model or model_for(settings, "review")
    if chosen is None:
        return None
    if chosen == "same":
        command = settings.agent_command
        name = Path(command[0]).name if command else settings.agent
        return Reviewer(settings.agent, command, name, model)
    if isinstance(chosen, str):
        return Reviewer(chosen, None, chosen, model)
    return Reviewer("custom", tuple(chosen), Path(chosen[0]).name, model)


def _with_model(argv: Sequence[str], model: str | None) -> list[str]:
    return [re.sub(r"\{model\}", lambda _m: model or "", a) for a in argv]


def _preset_args(agent: str, model: str | None, change_folder: Path) -> list[str]:
    args: list[str] = []
    if agent == "claude":
        args += ["--permission-mode", "dontAsk"]
    elif agent == "codex":
        args += ["-C", str(change_folder)]
    if model and agent in ("claude", "codex", "gemini"):
        args += ["--model", model]
    return args


def review_invocation(
    reviewer: Reviewer,
    prompt: str,
    prompt_file: Path,
    *,
    cwd: Path,
    change_folder: Path,
    task_files: Sequence[Path],
    agent_user_config: str,
    env: Mapping[str, str],
    sandboxed: bool,
) -> Invocation:
    """One review round's argv, stdin, files and parser (``ValueError`` for a bad reviewer)."""
    edits = [f"Edit(/{p})" for p in task_files]  # //absolute, in Claude's rule syntax
    command = list(reviewer.command) if reviewer.command else None
    return build_invocation(
        reviewer.agent,
        _with_model(command, reviewer.model) if command else None,
        _preset_args(reviewer.agent, reviewer.model, change_folder),
        prompt,
        prompt_file,
        python=sys.executable,
        cwd=cwd,
        allowed_tools=[*READ_TOOLS, *edits] if reviewer.agent == "claude" else [],
        agent_user_config=agent_user_config,
        env=env,
        sandboxed=sandboxed,
    )
