"""Agent presets: the argv to spawn for each agent, how the prompt reaches it, and the parser of
its output (SPEC §4).

========  ==============================================================================  ========
preset    argv                                                                            parser
========  ==============================================================================  ========
claude    ``claude -p {prompt} --output-format stream-json --verbose`` + ``agent_args``   Claude
codex     ``codex exec --json --sandbox workspace-write {prompt}``                        Codex
gemini    ``gemini -p {prompt} -o stream-json --approval-mode auto_edit``                 Gemini
demo      ``<python> -c <run ralph_lsp.demo.agent> <package folder> -p {prompt} …``        Claude
custom    ``agent_command``                                                               plain
========  ==============================================================================  ========

With a model (SPEC §15: ``ralph.models``, or the step of ``ralph.escalation``), every preset
passes ``--model <name>`` (the flag Claude Code, Codex and Gemini CLI share) and a custom
command's ``{model}`` becomes the name.

Nothing passes through a shell: the argv is executed as it is. This module builds the
invocation (:func:`build_invocation`, ``agent_program``, ``make_parser``); its parts:

- ``base``       the agent events (:class:`~ralph_lsp.agents.base.LogLine`, ``ResultInfo``,
  ``AgentProblem``, ``Activity``, ``Refusal``), the ``OutputParser`` protocol and the text
  helpers every parser shares;
- ``claude``, ``codex``, ``gemini``  each preset's output parser; ``plain`` a custom command's,
  which reads Claude Code's stream-json when the command prints it;
- ``_json``      the parsers' tolerant getters: None on a missing or mistyped field;
- ``limits``     when a limit lifts, read from a rate-limit or usage-limit message;
- ``cli_config`` what the codex and gemini presets give their CLIs beside the argv: retry knobs
  and Gemini's policy and system-defaults files;
- ``user_config``, ``user_config_codex_gemini``  ``ralph.agentUserConfig``: the user's global
  agent config kept out of each iteration (Claude Code; Codex and Gemini CLI);
- ``sandboxed``  what a preset changes inside ralph-lsp's own sandbox: the agent's stands down;
- ``reviewer_invocation``  the reviewer's invocation of each preset, with read-only tool permissions
  (SPEC §13).

Invariant: presets build argv and parse output, nothing more: no process is started here, and the
parsers never raise on any input (``tests/agents/test_parsers_never_raise.py``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ralph_lsp.agents import cli_config
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
from ralph_lsp.agents.sandboxed import stand_down
from ralph_lsp.agents.user_config import UserConfig, user_config

# Declared once, with the settings: every valid ``ralph.agent`` and the default ``ralph.agentArgs``
# (Claude flags: the codex and gemini presets skip them while they are the default).
from ralph_lsp.settings import DEFAULT_AGENT_ARGS, PRESETS, Settings

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
    "agent_program",
    "build_invocation",
    "make_parser",
]


_PYTHON = "{python}"  # stands for the interpreter in the demo preset's template
#: The folder holding this very ``ralph_lsp`` package (the installed or bundled one).
PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)
#: Runs ``ralph_lsp.demo.agent`` from :data:`PACKAGE_PARENT`, which is passed as the first
#: argument. Not ``-m``: that puts the working folder (the user's project) first on ``sys.path``,
#: so a project shipping its own ``ralph_lsp/`` would have its code run in place of ours.
RUN_DEMO_AGENT = (
    "import runpy, sys; sys.path[0] = sys.argv.pop(1); "
    "runpy.run_module('ralph_lsp.demo.agent', run_name='__main__', alter_sys=True)"
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
_MODEL = "{model}"
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
    #: Files the caller writes before spawning (path → text): Gemini's policy and defaults.
    files: Mapping[str, str] = field(default_factory=dict)
    #: What the preset adds to the agent's environment (Gemini's defaults file, the login that
    #: ``ralph.agentUserConfig`` passes on); the run's own ``env`` setting goes on top of it.
    env: Mapping[str, str] = field(default_factory=dict)
    #: What the preset left out of the user's own agent config, for the run's first lines.
    notes: list[str] = field(default_factory=list)


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
    agent_user_config: str = "isolate",
    env: Mapping[str, str] | None = None,
    sandboxed: bool = False,
    model: str | None = None,
) -> Invocation:
    """The argv, stdin and parser for one iteration of ``agent``.

    - ``agent`` is one of :data:`PRESETS`; ``custom`` needs a non-empty ``agent_command``
      (``ValueError`` otherwise, as for an unknown agent).
    - ``agent_command``, when given (non-empty), replaces the preset's argv but keeps the
      preset's parser; ``agent_args`` are not added to it. When its program is ``claude`` or
      ``gemini`` (the known CLIs that need one), the allow rules below are still added.
    - ``agent_args`` (``ralph.agentArgs``) are appended after the preset's own arguments, for
      ``claude``, ``codex`` and ``gemini``; the default (``["--permission-mode",
      "acceptEdits"]``, Claude flags) is given to ``claude`` only.
    - ``codex`` gets ``--disable unbounded_connection_retries`` and ``gemini`` a
      ``general.maxAttempts`` default, so a dead API ends a spawn in seconds (see
      :mod:`ralph_lsp.agents.cli_config`; the user's own CLI config wins). ``env`` is the
      agent's environment (``os.environ`` when None), read to find the user's config.
    - In every argv element, ``{prompt}`` becomes the prompt (or, past
      :data:`MAX_PROMPT_ARG_BYTES`, an instruction to read ``prompt_file``) and
      ``{promptFile}`` becomes
      ``str(prompt_file)`` (in one pass: a prompt that itself contains ``{promptFile}`` is left
      alone). The caller writes the prompt to ``prompt_file`` before spawning, and
      ``files`` too. When either
      placeholder was used, ``stdin_data`` is None (stdin is /dev/null); otherwise the prompt
      goes to stdin as UTF-8.
    - ``python`` is the interpreter the ``demo`` preset runs; ``cwd`` (the agent's working
      directory) only helps the parsers show paths relative to it.
    - ``allowed_tools`` are Claude permission rules (``Bash(make test:*)``, ``Edit``) the agent
      may use without asking (SPEC §4 v2): the ``claude`` preset passes them as
      ``--allowedTools``, the ``gemini`` preset writes ``Bash(<command>:*)`` rules into its
      ``--policy`` file; ``codex`` runs commands inside its workspace sandbox without asking
      already.
    - ``agent_user_config`` (``ralph.agentUserConfig``): ``isolate`` keeps the user's own global
      agent config out of the preset (see :mod:`ralph_lsp.agents.user_config`): its flags come
      right after ``agent_args``, so those cannot drop it; ``env`` is the agent's environment
      (default ``os.environ``), where the user's config is found. An ``agent_command`` is used
      as written (nothing added).
    - ``sandboxed``: ralph-lsp's own sandbox is on, so a preset's own sandbox stands down
      (:mod:`ralph_lsp.agents.sandboxed`); an ``agent_command`` is unchanged.
    - ``model`` (SPEC §15): a preset passes ``--model <model>`` right after its own arguments;
      in an ``agent_command``, ``{model}`` becomes it (``ValueError`` when the command asks for
      ``{model}`` and no model is set). None: the agent's own default.
    """
    _check_agent(agent)
    if agent_command is not None and not all(isinstance(a, str) for a in agent_command):
        raise ValueError("agentCommand must be a list of strings")
    the_env = cli_config.merged_env(env)
    files: dict[str, str] = {}
    extra_env: dict[str, str] = {}
    own = UserConfig()
    if agent_command:
        template: list[str] = _with_model(list(agent_command), model)
        known = Path(agent_command[0]).name
        if known == "claude":
            template += allow_flags("claude", allowed_tools)
        elif known == "gemini":
            files, extra_env, flags = cli_config.gemini_files(prompt_file, allowed_tools, the_env)
            template += flags
    elif agent == "custom":
        raise ValueError(
            "agent 'custom' needs ralph.agentCommand: an argv list such as "
            '["my-agent", "--prompt", "{prompt}"] (or --agent-command on the command line)'
        )
    else:
        template = [python if part == _PYTHON else part for part in _TEMPLATES[agent]]
        if model is not None:
            template += ["--model", model]
        if agent == "codex":
            template += cli_config.codex_flags(the_env)
        own = user_config(agent, agent_user_config, the_env, agent_args, cwd)
        if agent == "gemini":
            files, extra_env, flags = cli_config.gemini_files(
                prompt_file, allowed_tools, the_env, own.defaults
            )
            template += flags
            prompt = f"{prompt}\n\n{cli_config.GEMINI_PROMPT_NOTE}\n"
        if agent == "claude" or (
            agent in ("codex", "gemini") and tuple(agent_args) != DEFAULT_AGENT_ARGS
        ):
            template += [str(a) for a in agent_args]
        template += own.args
        template += allow_flags(agent, allowed_tools)
        if sandboxed:
            template, stand_down_env = stand_down(agent, template)
            extra_env.update(stand_down_env)

    used = False
    prompt_file_text = str(prompt_file)
    prompt_arg = prompt_argument(prompt, prompt_file)

    def substitute(m: re.Match[str]) -> str:
        nonlocal used
        used = True
        return prompt_arg if m.group(0) == "{prompt}" else prompt_file_text

    argv = [_PLACEHOLDER_RE.sub(substitute, part) for part in template]
    stdin_data = None if used else prompt.encode("utf-8", errors="replace")
    parser = make_parser(agent, _cwd(cwd))
    return Invocation(
        argv=argv,
        stdin_data=stdin_data,
        parser=parser,
        files=files,
        env={**extra_env, **own.env},
        notes=list(own.notes),
    )


def _with_model(command: list[str], model: str | None) -> list[str]:
    """A custom command with its ``{model}`` placeholders filled in."""
    if not any(_MODEL in part for part in command):
        return command
    if model is None:
        raise ValueError(
            "agentCommand uses {model}, but no model is set: set ralph.models.apply (CLI:"
            " --model) or ralph.escalation"
        )
    return [part.replace(_MODEL, model) for part in command]


def agent_program(settings: Settings, root: Path) -> str:
    """The program the agent of ``settings`` is started with (its argv[0] in ``root``), to look
    for before any run; ``ValueError`` when the settings name no usable agent command."""
    return build_invocation(
        settings.agent,
        list(settings.agent_command) if settings.agent_command else None,
        list(settings.agent_args),
        "",
        root / "prompt.md",
        python=sys.executable,
        model=settings.models.get("apply") or next(iter(settings.escalation), None),
    ).argv[0]


def verify_rules(commands: Sequence[str]) -> list[str]:
    """The Claude permission rule that lets the agent run each verification command (with any
    arguments after it): ``make test`` → ``Bash(make test:*)``."""
    return [f"Bash({c.strip()}:*)" for c in commands if c.strip()]


def allow_flags(agent: str, rules: Sequence[str]) -> list[str]:
    """The flags that grant ``rules`` (Claude's permission-rule syntax) to a preset."""
    rules = [r for r in dict.fromkeys(rules) if r.strip()]
    if not rules:
        return []
    if agent == "claude":
        return ["--allowedTools", *rules]
    return []  # gemini: in its --policy file (cli_config); codex: its sandbox allows commands


def _cwd(cwd: Path | None) -> str | None:
    return str(cwd) if cwd is not None else None
