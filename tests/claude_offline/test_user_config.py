"""ralph.agentUserConfig with the real Claude Code CLI, offline: the claude preset as built by
`build_invocation` (its argv and its environment) runs against the scripted model server, with a
user home built by the test.

- a heavy home leaves the requests within 5 % of an empty home's, and none of its parts (global
  CLAUDE.md, hook context, auto memory, user MCP tools) reaches a request; its hook never runs;
- each of the five ways of logging in still works under isolation;
- the project's own CLAUDE.md still reaches the request;
- `inherit` brings the user's config back.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ralph_lsp.agents import build_invocation

from .conftest import Change, MakeChange
from .harness import CliRun, offline_env, ralph_like_prompt
from .heavy_home import USER_MARKERS, build_heavy_home, hook_runs
from .scripted_server import ScriptedModel

TOOLS = ["--allowedTools", "Edit Write Read Bash"]


@dataclass
class Spawn:
    run: CliRun
    requests: int  # POST /v1/messages requests
    bytes: int  # their bodies, in all
    texts: str  # their bodies, joined
    headers: list[dict[str, str]]


def spawn_preset(
    claude_bin: Path,
    change: Change,
    home: Path,
    *,
    mode: str = "isolate",
    drop: tuple[str, ...] = (),
    **extra: str,
) -> Spawn:
    """One iteration of the claude preset (as the engine builds it) against a fresh server."""
    with ScriptedModel() as server:
        env = offline_env(claude_bin, server.url, home, **extra)
        for name in drop:
            env.pop(name, None)
        inv = build_invocation(
            "claude",
            None,
            ["--permission-mode", "acceptEdits", *TOOLS],
            ralph_like_prompt(change.folder),
            change.root / "prompt.md",
            agent_user_config=mode,
            env=env,
        )
        argv = [str(claude_bin), *inv.argv[1:]]
        full_env = {**env, **inv.env}
        start = time.monotonic()
        proc = subprocess.run(
            argv,
            cwd=change.root,
            env=full_env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        run = CliRun(argv, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)
        posts = [r for r in server.requests if r.method == "POST" and r.n_tools]
        return Spawn(
            run,
            len(posts),
            sum(r.size for r in posts),
            "\n".join(r.text for r in posts),
            [r.headers for r in posts],
        )


def _home(tmp_path: Path, name: str) -> Path:
    home = tmp_path / name
    home.mkdir()
    return home


def _ok(spawn: Spawn, change: Change) -> None:
    assert spawn.run.returncode == 0, spawn.run.stdout[-3000:] + spawn.run.stderr
    assert spawn.run.result["is_error"] is False
    assert change.checked() >= 1


def test_a_heavy_home_sends_no_more_than_an_empty_one(
    claude_bin: Path, make_change: MakeChange, tmp_path: Path
) -> None:
    change = make_change(3)
    empty = spawn_preset(claude_bin, change, _home(tmp_path, "empty"))
    _ok(empty, change)
    heavy_home = _home(tmp_path, "heavy")
    build_heavy_home(heavy_home, change.root)
    heavy = spawn_preset(claude_bin, change, heavy_home)
    _ok(heavy, change)
    assert heavy.requests == empty.requests
    ratio = heavy.bytes / empty.bytes
    assert ratio <= 1.05, f"heavy home {heavy.bytes} B vs empty {empty.bytes} B: {ratio:.3f}"
    for marker in USER_MARKERS:
        assert marker not in heavy.texts, marker
    assert hook_runs(heavy_home) == 0  # the user's hooks do not run in an iteration

    # inherit brings all of it back (the preset adds nothing)
    inherited = spawn_preset(claude_bin, change, heavy_home, mode="inherit")
    _ok(inherited, change)
    # Whether a `claude -p` iteration loads the user's auto memory at all is Claude Code's own
    # choice: with one version (2.1.330), one machine and one day, the same inherited spawn
    # sent it in some runs and not in others, forced on or not. Isolation's part is held above
    # (the marker never reaches the request, and CLAUDE_CODE_DISABLE_AUTO_MEMORY=1 is set:
    # tests/agents/test_user_config.py); the other markers show inherit brings the home back.
    for marker in USER_MARKERS:
        if marker != "USER-AUTO-MEMORY":
            assert marker in inherited.texts, marker
    assert hook_runs(heavy_home) == 1
    assert inherited.bytes / empty.bytes > 1.3, (inherited.bytes, empty.bytes)


def test_the_projects_own_claude_md_still_reaches_the_request(
    claude_bin: Path, make_change: MakeChange, tmp_path: Path
) -> None:
    change = make_change(1)
    (change.root / "CLAUDE.md").write_text("PROJECT-OWN-CLAUDE-MD: run make test\n")
    (change.root / ".claude").mkdir()
    (change.root / ".claude" / "rules").mkdir()
    (change.root / ".claude" / "rules" / "p.md").write_text("PROJECT-OWN-RULE\n")
    home = _home(tmp_path, "heavy")
    build_heavy_home(home, change.root)
    spawn = spawn_preset(claude_bin, change, home)
    _ok(spawn, change)
    assert "PROJECT-OWN-CLAUDE-MD" in spawn.texts and "PROJECT-OWN-RULE" in spawn.texts
    assert "USER-GLOBAL-CLAUDE-MD" not in spawn.texts


def _write_settings(home: Path, settings: dict[str, object]) -> None:
    (home / ".claude").mkdir(exist_ok=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))


def _helper(home: Path, key: str) -> str:
    script = home / "key-helper.sh"
    script.write_text(f"#!/bin/sh\necho {key}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def _login_apikey_env(home: Path) -> tuple[dict[str, str], tuple[str, ...], str]:
    return {"ANTHROPIC_API_KEY": "sk-ant-from-env"}, (), "x-api-key: sk-ant-from-env"


def _login_api_key_helper(home: Path) -> tuple[dict[str, str], tuple[str, ...], str]:
    _write_settings(home, {"apiKeyHelper": _helper(home, "sk-ant-from-helper")})
    return {}, ("ANTHROPIC_API_KEY",), "x-api-key: sk-ant-from-helper"


def _login_settings_env(home: Path) -> tuple[dict[str, str], tuple[str, ...], str]:
    _write_settings(home, {"env": {"ANTHROPIC_API_KEY": "sk-ant-from-settings"}})
    return {}, ("ANTHROPIC_API_KEY",), "x-api-key: sk-ant-from-settings"


def _login_credentials_file(home: Path) -> tuple[dict[str, str], tuple[str, ...], str]:
    credentials = {
        "claudeAiOauth": {
            "accessToken": "sk-ant-oat01-from-credentials-file",
            "refreshToken": "sk-ant-ort01-refresh",
            "expiresAt": int(time.time() * 1000) + 3_600_000,
            "scopes": ["user:inference", "user:profile"],
            "subscriptionType": "max",
        }
    }
    (home / ".claude").mkdir(exist_ok=True)
    path = home / ".claude" / ".credentials.json"
    path.write_text(json.dumps(credentials))
    os.chmod(path, 0o600)
    return {}, ("ANTHROPIC_API_KEY",), "authorization: Bearer sk-ant-oat01-from-credentials-file"


def _login_oauth_token(home: Path) -> tuple[dict[str, str], tuple[str, ...], str]:
    token = "sk-ant-oat01-from-oauth-env"
    header = f"authorization: Bearer {token}"
    return {"CLAUDE_CODE_OAUTH_TOKEN": token}, ("ANTHROPIC_API_KEY",), header


LOGINS = {
    "api_key_env": _login_apikey_env,
    "api_key_helper": _login_api_key_helper,
    "key_in_settings_env": _login_settings_env,
    "credentials_json": _login_credentials_file,
    "oauth_token_env": _login_oauth_token,
}


@pytest.mark.parametrize("login", list(LOGINS))
def test_every_way_of_logging_in_works_under_isolation(
    login: str, claude_bin: Path, make_change: MakeChange, tmp_path: Path
) -> None:
    change = make_change(1)
    home = _home(tmp_path, "home")
    extra, drop, header = LOGINS[login](home)
    spawn = spawn_preset(claude_bin, change, home, drop=drop, **extra)
    assert "Not logged in" not in spawn.run.stdout
    _ok(spawn, change)
    name, value = header.split(": ", 1)
    sent = [{k.lower(): v for k, v in h.items()}.get(name) for h in spawn.headers]
    assert sent and all(s == value for s in sent), sent


def _posted(server: ScriptedModel) -> list[int]:
    """The size of each model request the agent made (with its tools: the turns, not the
    side calls)."""
    return [r.size for r in server.requests if r.method == "POST" and r.n_tools]


def test_a_ralph_run_of_a_heavy_home_logged_in_by_api_key_helper(
    claude_bin: Path, tmp_path: Path
) -> None:
    """As a new user would: `ralph-lsp run` over 3 tasks, first with an empty home, then with a
    heavy one that logs in by apiKeyHelper; the run says what it left out, in its first lines."""
    from .test_real_claude import _project, ralph_run

    clean_base = tmp_path / "clean"
    clean_base.mkdir()
    with ScriptedModel() as server:
        clean = ralph_run(claude_bin, server, _project(clean_base), clean_base)
        clean_bytes = _posted(server)
    assert clean.returncode == 0, clean.stdout + clean.stderr

    heavy_base = tmp_path / "heavy"
    heavy_base.mkdir()
    change = _project(heavy_base)
    home = heavy_base / "agent-home"
    home.mkdir()
    build_heavy_home(home, change.root)
    settings_file = home / ".claude" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["apiKeyHelper"] = _helper(home, "sk-ant-from-helper")
    settings_file.write_text(json.dumps(settings))
    with ScriptedModel() as server:
        heavy = ralph_run(claude_bin, server, change, heavy_base, drop_env=("ANTHROPIC_API_KEY",))
        heavy_bytes = _posted(server)
        keys = {r.headers.get("x-api-key") for r in server.requests if r.method == "POST"}
    assert heavy.returncode == 0, heavy.stdout + heavy.stderr
    assert change.checked() == 3 and keys == {"sk-ant-from-helper"}
    # What the heavy home must not do is make a turn's context bigger (its CLAUDE.md, memory,
    # MCP tools or skills would be in every turn, the first included). The number of turns may
    # differ (a turn the CLI repeats on a loaded machine): compare turn by turn.
    assert heavy_bytes and clean_bytes
    for n, (h, c) in enumerate(zip(heavy_bytes, clean_bytes, strict=False), 1):
        assert h / c <= 1.05, f"turn {n}: {h} vs {c} bytes ({heavy_bytes} vs {clean_bytes})"
    assert hook_runs(home) == 0
    first = "\n".join(heavy.lines[:8])
    assert "agentUserConfig isolate: your ~/.claude CLAUDE.md" in first, first
    assert "3 MCP servers" in first and "auto memory" in first, first
    assert "your login is passed on: apiKeyHelper" in first, first
    # what the money bought: on the run's end line (the CLI prints it once, last), per
    # iteration's tokens, and in the record the history page and `ralph-lsp history` read
    end = heavy.last_line
    assert end.startswith("succeeded:"), end
    assert re.search(r"per (verified task|task, unverified) · \$0\.0000 on 0 iterations", end), end
    tokens = heavy.record["iterations"][0]["usage"]  # the receipt's (SPEC §15)
    assert tokens["inputTokens"] > 0 and tokens["outputTokens"] > 0, tokens
    assert tokens["cachedInputTokens"] == 0, tokens
