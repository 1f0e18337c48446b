"""``ralph.agentUserConfig: isolate`` for the codex and gemini presets (what their CLIs allow).

Measured with the real CLIs offline (codex 0.169, gemini 0.61), see docs/guide/agents.md "Your
own agent config". Codex: ``--ignore-user-config`` drops ``$CODEX_HOME/config.toml`` (MCP
servers, profiles, developer instructions, memories, features) but keeps ``auth.json``; the
login part of that file (model, model provider, base URLs, login method) is passed back with
``-c``, and the user's skills are switched off one by one (``skills.config``). Gemini: ``-e
none`` (extensions), ``--allowed-mcp-server-names`` (the project's servers only) and
``skills.disabled`` in the preset's system-defaults file. Neither CLI can leave out its global
``AGENTS.md`` / ``GEMINI.md`` without moving the home that also holds the login: that file is
still used, and the notes say so.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ralph_lsp.agents.cli_config import codex_user_home

#: Top-level keys of Codex's config.toml that are part of logging in (and the model it uses).
CODEX_LOGIN_KEYS = (
    "model", "model_provider", "openai_base_url", "chatgpt_base_url", "forced_login_method",
    "forced_chatgpt_workspace_id", "cli_auth_credentials_store", "preferred_auth_method",
)  # fmt: skip
#: Provider fields that hold a secret: never put on a command line (every local user reads it).
CODEX_SECRET_FIELDS = ("experimental_bearer_token", "http_headers")
#: A Gemini MCP server name no one uses: with it alone allowed, none of the user's servers start.
GEMINI_NO_MCP = "ralph-lsp-none"
_NAME_RE = re.compile(r"^name:\s*['\"]?([^'\"\n]+?)['\"]?\s*$", re.MULTILINE)


def _toml(value: Any) -> str | None:
    """``value`` as a TOML inline value (None when it cannot be one)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        items = [_toml(v) for v in value]
        return None if None in items else "[" + ",".join(str(i) for i in items) + "]"
    if isinstance(value, dict):
        pairs = [(json.dumps(str(k)), _toml(v)) for k, v in value.items()]
        if any(v is None for _, v in pairs):
            return None
        return "{" + ",".join(f"{k}={v}" for k, v in pairs) + "}"
    return None


def _read_toml(path: Path) -> dict[str, Any] | None:
    """The parsed file; {} when absent; None when it cannot be read (or Python has no tomllib)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    try:
        tomllib: Any = importlib.import_module("tomllib")
        data = tomllib.loads(raw.decode("utf-8"))
    except (ImportError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _skill_files(*folders: Path) -> list[Path]:
    found: list[Path] = []
    for folder in folders:
        try:
            found += sorted(
                p for p in folder.glob("*/SKILL.md") if not p.parent.name.startswith(".")
            )
        except OSError:
            continue
    return found


def _codex_login(config: dict[str, Any]) -> tuple[list[str], str | None]:
    """The ``-c`` pairs that carry the login part of ``config``, or (…, why not) when the
    selected provider holds a secret that must not go on a command line."""
    pairs = [(k, config[k]) for k in CODEX_LOGIN_KEYS if k in config]
    provider = config.get("model_provider")
    table = (config.get("model_providers") or {}).get(provider) if provider else None
    if isinstance(table, dict):
        secret = [f for f in CODEX_SECRET_FIELDS if f in table]
        if secret:
            return [], f"its model provider holds {' and '.join(secret)}"
        if not re.fullmatch(r"[A-Za-z0-9_-]+", str(provider)):
            return [], "its model provider's name cannot be given to -c"
        pairs.append((f"model_providers.{provider}", table))
    features = config.get("features")
    if isinstance(features, dict) and "unbounded_connection_retries" in features:
        pairs.append(
            ("features.unbounded_connection_retries", features["unbounded_connection_retries"])
        )
    args: list[str] = []
    for key, value in pairs:
        text = _toml(value)
        if text is None:
            return [], f"its {key} cannot be passed on"
        args += ["-c", f"{key}={text}"]
    return args, None


# Long: reads the config, builds the flags, then the three notes that say what was done.
def codex_isolation(
    env: Mapping[str, str], agent_args: Sequence[str]
) -> tuple[list[str], list[str]]:
    """(flags, notes) keeping the user's Codex config out of an iteration."""
    codex = codex_user_home(env)
    if codex is None:
        return [], []
    where = _shown(codex, env)
    config = _read_toml(codex / "config.toml")
    args: list[str] = []
    left: list[str] = []
    kept: list[str] = []
    if config is None:
        kept.append(f"{where}/config.toml (it cannot be read here to pass your login on)")
    else:
        login, why = _codex_login(config)
        if why:
            kept.append(f"{where}/config.toml ({why}, which stays off the command line)")
        else:
            args += ["--ignore-user-config", *login]
            if config:
                left.append("config.toml (MCP servers, profiles, instructions, memories, features)")
    home = Path(env["HOME"]) if env.get("HOME") else None
    skills = _skill_files(codex / "skills", *([home / ".agents" / "skills"] if home else []))
    if skills:
        off = ",".join(f"{{path={json.dumps(str(p))},enabled=false}}" for p in skills)
        args += ["-c", f"skills.config=[{off}]"]
        left.append(f"{len(skills)} skill{'s' if len(skills) != 1 else ''}")
    what = ", ".join(left) if left else "config.toml and skills"
    notes = [
        f"agentUserConfig isolate: your {where} {what} are not used by the agent; your login"
        " (auth.json, the model provider and its key) is; the project's own AGENTS.md is."
        " Set agentUserConfig: inherit to use yours"
    ]
    if (codex / "AGENTS.md").exists() or (codex / "AGENTS.override.md").exists():
        notes.append(
            f"your {where}/AGENTS.md is still used: Codex reads it from CODEX_HOME, which also"
            " holds your login, and has no switch to leave it out"
        )
    if kept:
        notes.append("not isolated: " + "; ".join(kept))
    if any(a in ("-p", "--profile") or a.startswith("--profile=") for a in agent_args):
        notes.append(
            "agentArgs' --profile is read from your config.toml: set agentUserConfig: inherit"
        )
    return args, notes


def _shown(path: Path, env: Mapping[str, str]) -> str:
    home = env.get("HOME", "")
    text = str(path)
    return "~" + text[len(home) :] if home and text.startswith(home.rstrip("/") + "/") else text


def _skill_names(files: Sequence[Path]) -> list[str]:
    names: list[str] = []
    for f in files:
        try:
            m = _NAME_RE.search(f.read_text(encoding="utf-8", errors="replace")[:4000])
        except OSError:
            continue
        names.append(m.group(1).strip() if m else f.parent.name)
    return list(dict.fromkeys(names))


def _project_mcp_names(cwd: Path | None) -> list[str] | None:
    if cwd is None:
        return None
    try:
        data = json.loads((cwd / ".gemini" / "settings.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        return None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    return [str(k) for k in servers] if isinstance(servers, dict) else []


def _has(args: Sequence[str], *flags: str) -> bool:
    return any(a in flags or a.split("=", 1)[0] in flags for a in args)


# Long: three independent parts (extensions, MCP servers, skills), each with its own condition.
def gemini_isolation(
    env: Mapping[str, str], agent_args: Sequence[str], cwd: Path | None
) -> tuple[list[str], dict[str, Any], list[str]]:
    """(flags, system defaults, notes) keeping the user's Gemini config out of an iteration."""
    home_text = env.get("GEMINI_CLI_HOME") or env.get("HOME")
    if not home_text:
        return [], {}, []
    home = Path(home_text)
    gemini = home / ".gemini"
    where = _shown(gemini, env)
    args: list[str] = []
    left: list[str] = []
    if not _has(agent_args, "-e", "--extensions"):
        args += ["-e", "none"]
        left.append("extensions")
    names = _project_mcp_names(cwd)
    if names is not None and not _has(agent_args, "--allowed-mcp-server-names"):
        args += ["--allowed-mcp-server-names", *(names or [GEMINI_NO_MCP])]
        left.append("MCP servers")
    project = (
        _skill_names(_skill_files(*(cwd / d / "skills" for d in (".gemini", ".agents"))))
        if cwd
        else []
    )
    skills = [
        n
        for n in _skill_names(_skill_files(gemini / "skills", home / ".agents" / "skills"))
        if n not in project
    ]
    defaults: dict[str, Any] = {"skills": {"disabled": skills}} if skills else {}
    if skills:
        left.append(f"{len(skills)} skill{'s' if len(skills) != 1 else ''}")
    notes = [
        f"agentUserConfig isolate: your {where} {', '.join(left) or 'extensions'} are not used by"
        " the agent; your login (API key, settings.json) is; the project's own GEMINI.md,"
        " .gemini/settings.json and MCP servers are. Set agentUserConfig: inherit to use yours",
        f"your {where}/GEMINI.md is still used, and the rest of your {where}/settings.json:"
        " Gemini CLI reads them from the home that holds your login and has no switch to leave"
        " them out",
    ]
    if not (gemini / "GEMINI.md").exists():
        notes[1] = f"the rest of your {where}/settings.json is still used (it holds your login)"
    return args, defaults, notes


def codex_provider_url(env: Mapping[str, str]) -> str | None:
    """The ``base_url`` of the model provider the user's Codex config selects
    (``model_provider`` and its ``[model_providers.<name>]`` table), or None: where Codex will
    connect, beside ``OPENAI_BASE_URL`` (a sandboxed run's allowlist needs its host)."""
    home = codex_user_home(env)
    config = _read_toml(home / "config.toml") if home is not None else None
    provider = (config or {}).get("model_provider")
    table = ((config or {}).get("model_providers") or {}).get(provider) if provider else None
    url = table.get("base_url") if isinstance(table, dict) else None
    return url if isinstance(url, str) and url.strip() else None
