"""What the ``codex`` and ``gemini`` presets give their CLIs beside the argv template: retry
knobs that keep a dead API from hanging a run, and (Gemini) the policy file that lets the agent
run the verification commands and write the build files Gemini protects.

Codex (0.169): ``--disable unbounded_connection_retries``, unless the user's own
``$CODEX_HOME/config.toml`` (default ``~/.codex/config.toml``) sets
``[features] unbounded_connection_retries``: then theirs wins. Without it Codex waits for an
unreachable API forever ("Reconnecting... waiting for network"); with it, it gives up after its
own few retries (about 25 s) with ``turn.failed`` "Connection failed: …".

Gemini (0.61): a *system defaults* settings file (``GEMINI_CLI_SYSTEM_DEFAULTS_PATH``, the lowest
precedence layer: the user's and the project's ``settings.json`` still win) with
``general.maxAttempts`` :data:`GEMINI_MAX_ATTEMPTS` (Gemini's default is 10 attempts over about
4 minutes per spawn); an already set ``GEMINI_CLI_SYSTEM_DEFAULTS_PATH`` is left alone. And a
``--policy`` TOML file (Gemini's current permission mechanism; ``--allowed-tools`` is deprecated):

- ``run_shell_command`` for each ``Bash(<command>:*)`` rule (the verification commands and
  ``ralph.allowedTools``);
- ``mv <file>.ralph-new <file>``: headless Gemini refuses every ``write_file``/``replace`` on
  build files (``pyproject.toml``, ``Makefile``, ``package.json``, ``Dockerfile``…) whatever the
  rules say, so the agent writes ``<file>.ralph-new`` and moves it into place, the one shell
  command this rule allows (a relative path inside the project, the same file both times).
  :data:`GEMINI_PROMPT_NOTE` tells the agent so.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

CODEX_NO_ENDLESS_RETRY = ("--disable", "unbounded_connection_retries")
GEMINI_MAX_ATTEMPTS = 2
GEMINI_DEFAULTS_ENV = "GEMINI_CLI_SYSTEM_DEFAULTS_PATH"
#: Matched by Gemini against ``"command":"<regex>`` in the JSON of the tool call's arguments:
#: ``mv <path>.ralph-new <path>``, the same relative path twice, at most one dot in it (so no
#: ``..``); the closing quote ends the command there. Gemini refuses any group holding a
#: quantifier that is itself quantified (a ReDoS guard), hence this flat form.
GEMINI_MOVE_REGEX = r'mv ([A-Za-z0-9_+-][A-Za-z0-9_/+-]*\.?[A-Za-z0-9_+-]*)\.ralph-new \1"'
GEMINI_PROMPT_NOTE = (
    "Note for Gemini CLI: headless, it refuses write_file and replace on build files"
    " (pyproject.toml, setup.py, setup.cfg, package.json, Makefile, Cargo.toml, go.mod,"
    " Dockerfile…). To change one, write its whole new content with write_file to the same"
    " path plus `.ralph-new` (e.g. pyproject.toml.ralph-new), then run exactly"
    " `mv pyproject.toml.ralph-new pyproject.toml` with run_shell_command."
)
_BASH_RULE_RE = re.compile(r"^Bash\((.+?)(?::\*)?\)$")


def codex_user_home(env: Mapping[str, str]) -> Path | None:
    home = env.get("CODEX_HOME") or (str(Path(env["HOME"]) / ".codex") if env.get("HOME") else None)
    return Path(home) if home else None


def codex_sets_feature(config_text: str, feature: str) -> bool:
    """Whether a Codex ``config.toml`` sets ``feature`` (``[features]`` table, or the dotted
    ``features.<name>`` key); a light reading, as Python 3.10 has no TOML parser."""
    table = ""
    for raw in config_text.splitlines():
        line = raw.split("#", 1)[0].strip()
        header = re.match(r"^\[\s*([^\]]+?)\s*\]$", line)
        if header:
            table = header.group(1).strip()
            continue
        key = line.split("=", 1)[0].strip().strip('"') if "=" in line else ""
        if (table == "features" and key == feature) or (
            table == "" and key == f"features.{feature}"
        ):
            return True
    return False


def codex_flags(env: Mapping[str, str]) -> list[str]:
    """The retry flag, unless the user's Codex config sets the feature itself."""
    if codex_sets_feature(codex_config_text(env), "unbounded_connection_retries"):
        return []
    return list(CODEX_NO_ENDLESS_RETRY)


def codex_config_text(env: Mapping[str, str]) -> str:
    """The user's Codex ``config.toml`` (``$CODEX_HOME``'s); "" when there is none to read."""
    home = codex_user_home(env)
    if home is None:
        return ""
    try:
        return (home / "config.toml").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def gemini_shell_prefixes(rules: Sequence[str]) -> list[str]:
    """The commands of the ``Bash(<command>:*)`` rules, in order, once each."""
    found = (_BASH_RULE_RE.match(r.strip()) for r in rules)
    return list(dict.fromkeys(m.group(1).strip() for m in found if m is not None))


def _toml_str(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid TOML basic string


def gemini_policy(rules: Sequence[str]) -> str:
    """The ``--policy`` TOML: the shell commands of ``rules`` and the build-file move."""
    out = ["# Written by ralph-lsp for one Gemini CLI spawn (see docs/guide/agents.md).", ""]
    prefixes = gemini_shell_prefixes(rules)
    if prefixes:
        out += [
            "[[rule]]",
            'toolName = "run_shell_command"',
            "commandPrefix = [" + ", ".join(_toml_str(p) for p in prefixes) + "]",
            'decision = "allow"',
            "priority = 100",
            "",
        ]
    out += [
        "[[rule]]",
        'toolName = "run_shell_command"',
        f"commandRegex = {_toml_str(GEMINI_MOVE_REGEX)}",
        'decision = "allow"',
        "priority = 100",
        "",
    ]
    return "\n".join(out)


def gemini_defaults(extra: Mapping[str, Any] | None = None) -> str:
    """The system-defaults file: the retry default, and ``extra`` (agentUserConfig's)."""
    data: dict[str, Any] = {"general": {"maxAttempts": GEMINI_MAX_ATTEMPTS}, **(extra or {})}
    return json.dumps(data, indent=2) + "\n"


def gemini_files(
    prompt_file: Path,
    rules: Sequence[str],
    env: Mapping[str, str],
    extra_defaults: Mapping[str, Any] | None = None,
) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(files to write, environment to add, flags) for one Gemini spawn; the files go beside
    ``prompt_file``."""
    base = prompt_file.with_suffix("")
    policy = Path(f"{base}.gemini-policy.toml")
    files = {str(policy): gemini_policy(rules)}
    extra_env: dict[str, str] = {}
    if not env.get(GEMINI_DEFAULTS_ENV):
        folder = gemini_defaults_folder(env) or base.parent
        text = gemini_defaults(extra_defaults)
        # Named by its content: every spawn with the same defaults shares one small file, so
        # the user's cache folder does not grow with each iteration.
        defaults = folder / f"{_digest(text)}.gemini-defaults.json"
        files[str(defaults)] = text
        extra_env[GEMINI_DEFAULTS_ENV] = str(defaults)
    return files, extra_env, ["--policy", str(policy)]


def gemini_defaults_folder(env: Mapping[str, str]) -> Path | None:
    """Where the Gemini defaults file goes: a folder of the user's that nobody else can write
    to, from the ground up. Gemini ignores a system settings file under a folder others can
    write to (a project under /tmp), and then keeps its ten attempts and the user's skills.
    None: no such folder (the file then goes beside the prompt, as before)."""
    candidates = [env.get("XDG_RUNTIME_DIR"), env.get("XDG_CACHE_HOME")]
    home = env.get("HOME")
    candidates.append(str(Path(home) / ".cache") if home else None)
    try:
        import pwd

        candidates.append(str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache"))
    except (ImportError, KeyError):
        pass
    for base in candidates:
        if base and Path(base).is_absolute():
            folder = Path(base) / "ralph-lsp" / "gemini"
            if _nobody_else_writes(folder):
                return folder
    return None


def _nobody_else_writes(path: Path) -> bool:
    """No existing folder from ``path`` up to / is writable by others (the sticky /tmp is)."""
    for folder in (path, *path.parents):
        try:
            mode = os.stat(folder).st_mode
        except OSError:
            continue  # made later, private (mode 0700)
        if mode & stat.S_IWOTH:
            return False
    return True


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def merged_env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return env if env is not None else os.environ


# -- the model a spawn will use, for pricing its tokens (loop/budget.py) ------------------------

#: What codex 0.169 uses with no model set (``codex debug models``: priority 1).
CODEX_DEFAULT_MODEL = "gpt-6.1-sol"
#: What gemini 0.61 uses with no model set: its router picks a model per request.
GEMINI_DEFAULT_MODEL = "auto"
_TOML_MODEL_RE = re.compile(r"""^\s*model\s*=\s*(?:"([^"]*)"|'([^']*)')""")


def _arg_model(args: Sequence[str], config_flag: bool) -> str | None:
    """``-m X``, ``--model X`` or ``--model=X`` (and, for Codex, ``-c model=X``); the last wins."""
    found: str | None = None
    for i, arg in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else None
        if arg in ("-m", "--model") and nxt is not None:
            found = nxt
        elif arg.startswith("--model="):
            found = arg.split("=", 1)[1]
        elif config_flag and arg in ("-c", "--config") and nxt and nxt.startswith("model="):
            found = nxt.split("=", 1)[1].strip().strip("\"'")
    return found or None


def codex_model(args: Sequence[str], env: Mapping[str, str]) -> str:
    """The model of a ``codex exec`` with these arguments: ``-m``/``--model``/``-c model=``,
    else ``model`` at the top of ``$CODEX_HOME/config.toml``, else Codex's default. (A
    ``--profile``'s model is not read.)"""
    found = _arg_model(args, config_flag=True)
    if found:
        return found
    for line in codex_config_text(env).splitlines():
        if line.strip().startswith("["):
            break  # only the top-level table names the model
        m = _TOML_MODEL_RE.match(line)
        if m:
            return m.group(1) if m.group(1) is not None else m.group(2)
    return CODEX_DEFAULT_MODEL


def gemini_model(args: Sequence[str], env: Mapping[str, str], cwd: Path | None) -> str:
    """The model of a ``gemini`` with these arguments: ``-m``/``--model``, else
    ``GEMINI_MODEL``, else ``model.name`` of the project's, then the user's ``settings.json``,
    else Gemini's default (``auto``)."""
    found = _arg_model(args, config_flag=False) or env.get("GEMINI_MODEL")
    if found:
        return found
    home = env.get("GEMINI_CLI_HOME") or env.get("HOME")
    places = [cwd / ".gemini" if cwd else None, Path(home) / ".gemini" if home else None]
    for folder in places:
        if folder is None:
            continue
        try:
            data = json.loads((folder / "settings.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        model = data.get("model") if isinstance(data, dict) else None
        name = model.get("name") if isinstance(model, dict) else None
        if isinstance(name, str) and name.strip():
            return name
    return GEMINI_DEFAULT_MODEL
