"""build_invocation(sandboxed=True): each preset's own sandbox stands down inside ours; nothing
else of the argv changes, and an agentCommand is left as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ralph_lsp.agents import DEFAULT_AGENT_ARGS, build_invocation

ENV = {"HOME": "/nonexistent-home", "PATH": "/usr/bin"}


def _both(agent: str, tmp_path: Path) -> tuple[list[str], list[str], dict[str, str]]:
    args = list(DEFAULT_AGENT_ARGS)
    plain = build_invocation(agent, None, args, "do it", tmp_path / "p.md", env=ENV)
    boxed = build_invocation(agent, None, args, "do it", tmp_path / "p.md", env=ENV, sandboxed=True)
    return plain.argv, boxed.argv, dict(boxed.env)


def test_codex_runs_without_its_own_sandbox_inside_ours(tmp_path: Path) -> None:
    plain, boxed, _ = _both("codex", tmp_path)
    i = plain.index("--sandbox")
    assert plain[i + 1] == "workspace-write"
    assert boxed[i + 1] == "danger-full-access" and "workspace-write" not in boxed
    quiet = ["--disable", "plugins", "-c", "analytics.enabled=false"]
    assert boxed[-4:] == quiet and "plugins" not in plain
    assert boxed[:i] + boxed[i + 2 : -4] == plain[:i] + plain[i + 2 :]


def test_claude_turns_a_projects_sandbox_setting_off(tmp_path: Path) -> None:
    plain, boxed, _ = _both("claude", tmp_path)
    assert "--settings" not in plain
    assert boxed[: len(plain)] == plain
    extra = boxed[len(plain) :]
    assert extra[0] == "--settings" and json.loads(extra[1]) == {"sandbox": {"enabled": False}}


def test_claude_keeps_one_settings_flag_with_the_users_login_helper(tmp_path: Path) -> None:
    # Claude Code takes only the last --settings: a second one dropped the apiKeyHelper that
    # isolation passes on, and the sandboxed run ended "Not logged in".
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"apiKeyHelper": "/k.sh"}))
    env = {**ENV, "HOME": str(home)}
    args = list(DEFAULT_AGENT_ARGS)
    boxed = build_invocation(
        "claude", None, args, "do it", tmp_path / "p.md", env=env, sandboxed=True
    ).argv
    assert boxed.count("--settings") == 1
    merged = json.loads(boxed[boxed.index("--settings") + 1])
    assert merged == {"apiKeyHelper": "/k.sh", "sandbox": {"enabled": False}}


def test_a_settings_file_the_user_names_is_left_to_win(tmp_path: Path) -> None:
    args = [*DEFAULT_AGENT_ARGS, "--settings", "/my/settings.json"]
    boxed = build_invocation(
        "claude", None, args, "do it", tmp_path / "p.md", env=ENV, sandboxed=True
    ).argv
    assert boxed.count("--settings") == 1 and "/my/settings.json" in boxed


def test_gemini_is_told_not_to_start_its_sandbox(tmp_path: Path) -> None:
    plain, boxed, env = _both("gemini", tmp_path)
    assert boxed == plain
    assert env["GEMINI_SANDBOX"] == "false"
    unboxed = build_invocation("gemini", None, [], "x", tmp_path / "p.md", env=ENV)
    assert "GEMINI_SANDBOX" not in unboxed.env


@pytest.mark.parametrize("agent", ["demo", "custom"])
def test_other_agents_and_agent_commands_are_unchanged(agent: str, tmp_path: Path) -> None:
    command = ["codex", "exec", "--sandbox", "workspace-write", "{prompt}"]
    for cmd in ([*command], None if agent == "demo" else [*command]):
        a = build_invocation(agent, cmd, [], "x", tmp_path / "p.md", env=ENV)
        b = build_invocation(agent, cmd, [], "x", tmp_path / "p.md", env=ENV, sandboxed=True)
        assert a.argv == b.argv and dict(a.env) == dict(b.env)
