"""Keeping the user's own global agent config out of each iteration (``ralph.agentUserConfig``).

Each iteration is meant to be a fresh agent that knows the project and the prompt, nothing more.
Claude Code, by default, also loads everything the user keeps in their home: ``~/.claude/
CLAUDE.md``, plugins, skills, hooks, output styles, rules, user-scope MCP servers (in
``~/.claude.json``) and auto memory (which also tells every iteration to write memories there).
Measured with the real CLI, that makes every request 1.65× larger (2.06× through a gateway).

With ``isolate`` (the default) the claude preset adds, after the user's ``agentArgs`` so that
they cannot lose it:

- ``--setting-sources project,local``: the user-level settings are not loaded, the project's own
  ``CLAUDE.md``, ``.claude/settings*.json`` and ``.mcp.json`` still are;
- ``CLAUDE_CODE_DISABLE_AUTO_MEMORY=1`` in its environment;
- the user's login-related settings, which the first flag would otherwise drop (logins by
  ``apiKeyHelper`` or by a key, gateway or provider switch in the user settings' ``env`` end in
  "Not logged in" without them): ``apiKeyHelper`` (and the AWS/GCP credential helpers) go in
  ``--settings <json>``, the API-related ``env`` entries into the agent's environment (where the
  CLI would put them itself), never onto a command line that every local user can read.

Logins through ``ANTHROPIC_API_KEY`` in the environment, ``~/.claude/.credentials.json`` and
``CLAUDE_CODE_OAUTH_TOKEN`` need nothing: the CLI reads them whatever the setting sources.

Codex and Gemini CLI keep the login next to the rest of their user config (``~/.codex``,
``~/.gemini``): what of it their CLIs let a preset leave out is in
:mod:`ralph_lsp.agents.user_config_codex_gemini`; :func:`user_config` is the one place a preset's
isolation goes.

Pure: reads a few files under the home named by the agent's environment; never raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ralph_lsp.agents.user_config_codex_gemini import codex_isolation, gemini_isolation

#: The settings sources a Claude iteration loads under ``isolate``.
CLAUDE_SETTING_SOURCES = "project,local"
#: What turns auto memory off (it would otherwise also make iterations depend on each other).
CLAUDE_ENV = {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}
#: User settings that are part of logging in and are passed on under ``isolate``.
LOGIN_SETTINGS = ("apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "gcpAuthRefresh")
#: The ``env`` entries of the user settings that configure the API: keys and tokens, base URLs
#: (gateways), provider switches (Bedrock, Vertex, Foundry) and their credentials and regions,
#: models, custom headers, proxies and certificates. Everything else in ``env`` stays out.
LOGIN_ENV_RE = re.compile(
    r"^(?:ANTHROPIC_\w+|CLAUDE_CODE_USE_\w+|CLAUDE_CODE_SKIP_\w+_AUTH|CLAUDE_CODE_OAUTH_TOKEN"
    r"|CLAUDE_CODE_API_KEY_HELPER_TTL_MS|CLAUDE_CODE_CLIENT_\w+|AWS_\w+|CLOUD_ML_REGION"
    r"|VERTEX_REGION_\w+|GOOGLE_APPLICATION_CREDENTIALS|GOOGLE_CLOUD_PROJECT|API_TIMEOUT_MS"
    r"|HTTPS?_PROXY|NO_PROXY|NODE_EXTRA_CA_CERTS)$",
    re.IGNORECASE,
)
# What under the user's Claude config folder would reach an iteration, in the order it is named.
_CLAUDE_ITEMS = (
    ("CLAUDE.md", "CLAUDE.md"),
    ("settings.json", "settings (hooks, output style, permissions)"),
    ("plugins", "plugins"),
    ("skills", "skills"),
    ("agents", "agents"),
    ("commands", "commands"),
    ("rules", "rules"),
    ("output-styles", "output styles"),
)


@dataclass(frozen=True)
class UserConfig:
    """What a preset adds to keep the user's config out: flags after ``agentArgs``, entries of
    the agent's environment (under the run's own ``env``), and the lines that say so."""

    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: Gemini: settings for the preset's system-defaults file (e.g. ``skills.disabled``).
    defaults: dict[str, Any] = field(default_factory=dict)


def claude_config_dir(env: Mapping[str, str]) -> Path | None:
    """Where the agent's Claude Code keeps the user's config: ``$CLAUDE_CONFIG_DIR``, else
    ``$HOME/.claude``."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser()
    home = env.get("HOME")
    return Path(home) / ".claude" if home else None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            data = json.loads(f.read(4_000_000))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def claude_login_settings(config_dir: Path | None) -> tuple[dict[str, str], dict[str, str]]:
    """The user's login-related settings: (helpers for ``--settings``, API ``env`` entries)."""
    if config_dir is None:
        return {}, {}
    user = _read_json(config_dir / "settings.json")
    helpers = {k: v for k in LOGIN_SETTINGS if isinstance(v := user.get(k), str) and v}
    raw_env = user.get("env")
    env = (
        {k: v for k, v in raw_env.items() if isinstance(v, str) and LOGIN_ENV_RE.match(str(k))}
        if isinstance(raw_env, dict)
        else {}
    )
    return helpers, env


def _user_mcp_servers(env: Mapping[str, str], config_dir: Path) -> int:
    """How many user-scope MCP servers ``~/.claude.json`` declares."""
    if env.get("CLAUDE_CONFIG_DIR"):
        state = config_dir / ".claude.json"
    else:
        state = config_dir.parent / ".claude.json"
    servers = _read_json(state).get("mcpServers")
    return len(servers) if isinstance(servers, dict) else 0


def claude_left_out(env: Mapping[str, str], config_dir: Path | None) -> list[str]:
    """What of the user's Claude config exists and stays out of the iterations."""
    if config_dir is None:
        return []
    found = [label for name, label in _CLAUDE_ITEMS if (config_dir / name).exists()]
    servers = _user_mcp_servers(env, config_dir)
    if servers:
        found.append(f"{servers} MCP server{'s' if servers != 1 else ''}")
    projects = config_dir / "projects"
    try:
        if any((p / "memory").is_dir() for p in projects.iterdir()):
            found.append("auto memory")
    except OSError:
        pass
    return found


def _shown(config_dir: Path | None, env: Mapping[str, str]) -> str:
    if config_dir is None:
        return "~/.claude"
    home = env.get("HOME", "")
    text = str(config_dir)
    return "~" + text[len(home) :] if home and text.startswith(home.rstrip("/") + "/") else text


def claude_isolation(env: Mapping[str, str], agent_args: Sequence[str] = ()) -> UserConfig:
    """The flags, environment and notes that keep the user's Claude config out of an iteration.

    ``env`` is the agent's environment (its ``HOME`` / ``CLAUDE_CONFIG_DIR`` name the config).
    """
    config_dir = claude_config_dir(env)
    helpers, login_env = claude_login_settings(config_dir)
    args = ["--setting-sources", CLAUDE_SETTING_SOURCES]
    if helpers:
        args += ["--settings", json.dumps(helpers, separators=(",", ":"))]
    where = _shown(config_dir, env)
    found = [f for f in claude_left_out(env, config_dir) if f != "auto memory"]
    what = ", ".join(found) if found else "settings, plugins, hooks and MCP servers"
    notes = [
        f"agentUserConfig isolate: your {where} {what} and auto memory are not used by the agent;"
        " the project's own CLAUDE.md, .claude/settings*.json and .mcp.json are."
        " Set agentUserConfig: inherit to use yours"
    ]
    passed = [*helpers, *(f"env {k}" for k in login_env)]
    if passed:
        notes.append("your login is passed on: " + ", ".join(passed))
    overridden = [a for a in ("--setting-sources", "--settings") if _has_flag(agent_args, a)]
    if overridden:
        notes.append(
            f"agentArgs' {' and '.join(overridden)} are overridden by agentUserConfig isolate"
            " (set agentUserConfig: inherit to pass your own)"
        )
    return UserConfig(args, {**login_env, **CLAUDE_ENV}, notes)


def _has_flag(args: Sequence[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in args)


def user_config(
    agent: str,
    mode: str,
    env: Mapping[str, str],
    agent_args: Sequence[str] = (),
    cwd: Path | None = None,
) -> UserConfig:
    """What the ``agent`` preset adds for ``ralph.agentUserConfig`` = ``mode``; ``cwd`` is the
    project (Gemini: its own MCP servers and skills stay)."""
    if mode != "isolate":
        home = {"claude": "~/.claude", "codex": "~/.codex", "gemini": "~/.gemini"}.get(agent)
        return UserConfig(
            notes=[f"agentUserConfig inherit: the agent uses your {home}"] if home else []
        )
    if agent == "claude":
        return claude_isolation(env, agent_args)
    if agent == "codex":
        args, notes = codex_isolation(env, agent_args)
        return UserConfig(args, {}, notes)
    if agent == "gemini":
        args, defaults, notes = gemini_isolation(env, agent_args, cwd)
        return UserConfig(args, {}, notes, defaults)
    return UserConfig()
