"""Agent presets: the argv to spawn for each agent, how the prompt reaches it, and the parser of
its output (SPEC §4).

========  ==============================================================================  ========
preset    argv                                                                            parser
========  ==============================================================================  ========
claude    ``claude -p {prompt} --output-format stream-json --verbose`` + ``agent_args``   Claude
codex     ``codex exec --json --sandbox workspace-write {prompt}``                        Codex
gemini    ``gemini -p {prompt} -o stream-json --approval-mode auto_edit``                 Gemini
demo      ``<python> -c <run ralph_lsp.demo_agent> <package folder> -p {prompt} …``        Claude
custom    ``agent_command``                                                               plain
========  ==============================================================================  ========

Nothing passes through a shell: the argv is executed as it is.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.agents.base import (
    Activity,
    AgentEvent,
    AgentProblem,
    LogLine,
    OutputParser,
    ResultInfo,
)
from ralph_lsp.agents.claude import ClaudeParser
from ralph_lsp.agents.codex import CodexParser
from ralph_lsp.agents.gemini import GeminiParser
from ralph_lsp.agents.plain import PlainParser

# Declared once, with the settings: every valid ``ralph.agent`` and the default ``ralph.agentArgs``
# (applied to the ``claude`` preset only).
from ralph_lsp.settings import DEFAULT_AGENT_ARGS, PRESETS

__all__ = [
    "DEFAULT_AGENT_ARGS",
    "PRESETS",
    "Activity",
    "AgentEvent",
    "AgentProblem",
    "Invocation",
    "LogLine",
    "OutputParser",
    "ResultInfo",
    "build_invocation",
    "make_parser",
]


_PYTHON = "{python}"  # stands for the interpreter in the demo preset's template
#: The folder holding this very ``ralph_lsp`` package (the installed or bundled one).
PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)
#: Runs ``ralph_lsp.demo_agent`` from :data:`PACKAGE_PARENT`, which is passed as the first
#: argument. Not ``-m``: that puts the working folder (the user's project) first on ``sys.path``,
#: so a project shipping its own ``ralph_lsp/`` would have its code run in place of ours.
RUN_DEMO_AGENT = (
    "import runpy, sys; sys.path[0] = sys.argv.pop(1); "
    "runpy.run_module('ralph_lsp.demo_agent', run_name='__main__', alter_sys=True)"
)
_TEMPLATES: dict[str, tuple[str, ...]] = {
    "claude": ("claude", "-p", "{prompt}", "--output-format", "stream-json", "--verbose"),
    "codex": ("codex", "exec", "--json", "--sandbox", "workspace-write", "{prompt}"),
    "gemini": ("gemini", "-p", "{prompt}", "-o", "stream-json", "--approval-mode", "auto_edit"),
    "demo": (
        _PYTHON,
        "-c",
        RUN_DEMO_AGENT,
        PACKAGE_PARENT,
        "-p",
        "{prompt}",
        "--output-format",
        "stream-json",
    ),
}
_PARSERS: dict[str, Callable[[str | None], OutputParser]] = {
    "claude": ClaudeParser,
    "codex": CodexParser,
    "gemini": GeminiParser,
    "demo": ClaudeParser,
    "custom": PlainParser,
}
_PLACEHOLDER_RE = re.compile(r"\{prompt\}|\{promptFile\}")
#: Linux refuses one argv element longer than 128 KiB ("Argument list too long"); a prompt past
#: this many UTF-8 bytes is handed over as a file instead (see ``prompt_argument``).
MAX_PROMPT_ARG_BYTES = 100_000


_POINTER = "Your instructions for this session are in the file "
_POINTER_END = " (too long for a command line)."
_POINTER_RE = re.compile(re.escape(_POINTER) + r"(.+?)" + re.escape(_POINTER_END))


def prompt_argument(prompt: str, prompt_file: Path) -> str:
    """What ``{prompt}`` becomes: the prompt itself, or, when it is too long for a command line,
    a short instruction to read it from ``prompt_file`` (which holds the whole prompt)."""
    if len(prompt) * 4 <= MAX_PROMPT_ARG_BYTES or len(prompt.encode()) <= MAX_PROMPT_ARG_BYTES:
        return prompt
    return (
        f"{_POINTER}{prompt_file}{_POINTER_END} Read that whole file first, then follow it exactly."
    )


def pointed_prompt_file(text: str) -> Path | None:
    """The file a :func:`prompt_argument` instruction points to, or None when ``text`` is no
    such instruction (what the demo agent follows, as a real agent would)."""
    m = _POINTER_RE.search(text)
    return Path(m.group(1)) if m and len(text) < 8192 else None


@dataclass(frozen=True)
class Invocation:
    """What to spawn: ``argv`` (no shell), the bytes for stdin (None: stdin is /dev/null) and a
    fresh parser for this one process's output."""

    argv: list[str]
    stdin_data: bytes | None
    parser: OutputParser


def make_parser(agent: str, cwd: str | None = None) -> OutputParser:
    """A fresh output parser for ``agent`` (``ValueError`` for an unknown preset)."""
    _check_agent(agent)
    return _PARSERS[agent](cwd)


def _check_agent(agent: str) -> None:
    if agent not in _PARSERS:
        raise ValueError(f"unknown agent {agent!r} (known: {', '.join(PRESETS)})")


# Long: the contract's every rule in its docstring, then a few lines applying them in order.
def build_invocation(
    agent: str,
    agent_command: list[str] | None,
    agent_args: list[str],
    prompt: str,
    prompt_file: Path,
    python: str = sys.executable,
    *,
    cwd: Path | None = None,
    allowed_tools: Sequence[str] = (),
) -> Invocation:
    """The argv, stdin and parser for one iteration of ``agent``.

    - ``agent`` is one of :data:`PRESETS`; ``custom`` needs a non-empty ``agent_command``
      (``ValueError`` otherwise, as for an unknown agent).
    - ``agent_command``, when given (non-empty), replaces the preset's argv but keeps the
      preset's parser; ``agent_args`` are not added to it.
    - ``agent_args`` (``ralph.agentArgs``, default ``["--permission-mode", "acceptEdits"]``) are
      appended to the ``claude`` preset only; the other presets ignore them.
    - In every argv element, ``{prompt}`` becomes the prompt (or, past
      :data:`MAX_PROMPT_ARG_BYTES`, an instruction to read ``prompt_file``) and
      ``{promptFile}`` becomes
      ``str(prompt_file)`` (in one pass: a prompt that itself contains ``{promptFile}`` is left
      alone). The caller writes the prompt to ``prompt_file`` before spawning. When either
      placeholder was used, ``stdin_data`` is None (stdin is /dev/null); otherwise the prompt
      goes to stdin as UTF-8.
    - ``python`` is the interpreter the ``demo`` preset runs; ``cwd`` (the agent's working
      directory) only helps the parsers show paths relative to it.
    - ``allowed_tools`` are Claude permission rules (``Bash(make test:*)``, ``Edit``) the agent
      may use without asking (SPEC §4 v2): the ``claude`` preset passes them as
      ``--allowedTools``, the ``gemini`` preset maps ``Bash(<command>:*)`` rules to its
      ``--allowed-tools run_shell_command(<command>)``; ``codex`` runs commands inside its
      workspace sandbox without asking already; an ``agent_command`` is used as written.
    """
    _check_agent(agent)
    if agent_command is not None and not all(isinstance(a, str) for a in agent_command):
        raise ValueError("agentCommand must be a list of strings")
    if agent_command:
        template: list[str] = list(agent_command)
    elif agent == "custom":
        raise ValueError(
            "agent 'custom' needs ralph.agentCommand: an argv list such as "
            '["my-agent", "--prompt", "{prompt}"] (or --agent-command on the command line)'
        )
    else:
        template = [python if part == _PYTHON else part for part in _TEMPLATES[agent]]
        if agent == "claude":
            template += [str(a) for a in agent_args]
        template += allow_flags(agent, allowed_tools)

    used = False
    prompt_file_text = str(prompt_file)
    prompt_arg = prompt_argument(prompt, prompt_file)

    def substitute(m: re.Match[str]) -> str:
        nonlocal used
        used = True
        return prompt_arg if m.group(0) == "{prompt}" else prompt_file_text

    argv = [_PLACEHOLDER_RE.sub(substitute, part) for part in template]
    stdin_data = None if used else prompt.encode("utf-8", errors="replace")
    return Invocation(argv=argv, stdin_data=stdin_data, parser=make_parser(agent, _cwd(cwd)))


def verify_rules(commands: Sequence[str]) -> list[str]:
    """The Claude permission rule that lets the agent run each verification command (with any
    arguments after it): ``make test`` → ``Bash(make test:*)``."""
    return [f"Bash({c.strip()}:*)" for c in commands if c.strip()]


_BASH_RULE_RE = re.compile(r"^Bash\((.+?)(?::\*)?\)$")


def allow_flags(agent: str, rules: Sequence[str]) -> list[str]:
    """The flags that grant ``rules`` (Claude's permission-rule syntax) to a preset."""
    rules = [r for r in dict.fromkeys(rules) if r.strip()]
    if not rules:
        return []
    if agent == "claude":
        return ["--allowedTools", *rules]
    if agent == "gemini":
        mapped = [
            f"run_shell_command({m.group(1)})"
            for m in (_BASH_RULE_RE.match(r) for r in rules)
            if m is not None
        ]
        return [flag for rule in mapped for flag in ("--allowed-tools", rule)]
    return []


def _cwd(cwd: Path | None) -> str | None:
    return str(cwd) if cwd is not None else None
