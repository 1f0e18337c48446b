"""ralph.agentUserConfig in the preset: what the claude preset adds, read from a real home
made in tmp_path (the real CLI's side is tests/claude_offline/test_user_config.py)."""

from __future__ import annotations

import json
from pathlib import Path

from ralph_lsp.agents import build_invocation
from ralph_lsp.agents.user_config import user_config

PFILE = Path("prompt.md")


def _home(tmp_path: Path, settings: dict[str, object]) -> Path:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))
    return tmp_path


def test_only_the_login_is_passed_on_and_no_secret_goes_on_the_command_line(
    tmp_path: Path,
) -> None:
    home = _home(
        tmp_path,
        {
            "apiKeyHelper": "/opt/bin/get-key",
            "hooks": {"SessionStart": []},
            "env": {
                "ANTHROPIC_API_KEY": "sk-secret",
                "ANTHROPIC_BASE_URL": "https://gateway.example",
                "CLAUDE_CODE_USE_BEDROCK": "1",
                "MY_TOOL_FLAG": "on",
            },
        },
    )
    inv = build_invocation("claude", None, [], "p", PFILE, env={"HOME": str(home)})
    tail = inv.argv[inv.argv.index("--setting-sources") :]
    assert tail == [
        "--setting-sources",
        "project,local",
        "--settings",
        '{"apiKeyHelper":"/opt/bin/get-key"}',
    ]
    assert "sk-secret" not in " ".join(inv.argv)
    assert inv.env == {
        "ANTHROPIC_API_KEY": "sk-secret",
        "ANTHROPIC_BASE_URL": "https://gateway.example",
        "CLAUDE_CODE_USE_BEDROCK": "1",
        "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    }
    assert any("apiKeyHelper, env ANTHROPIC_API_KEY" in n for n in inv.notes)


def test_claude_config_dir_is_where_the_config_is_read(tmp_path: Path) -> None:
    config = tmp_path / "elsewhere"
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({"apiKeyHelper": "helper"}))
    (config / "CLAUDE.md").write_text("mine")
    (config / ".claude.json").write_text(json.dumps({"mcpServers": {"a": {}, "b": {}}}))
    got = user_config(
        "claude", "isolate", {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(config)}
    )
    assert got.args[-2:] == ["--settings", '{"apiKeyHelper":"helper"}']
    assert "CLAUDE.md" in got.notes[0] and "2 MCP servers" in got.notes[0]
    assert "inherit" in got.notes[0]


def test_agent_args_cannot_drop_the_isolation_and_are_told_so(tmp_path: Path) -> None:
    args = ["--setting-sources", "user,project,local"]
    inv = build_invocation("claude", None, args, "p", PFILE, env={"HOME": str(tmp_path)})
    assert inv.argv[-4:] == [*args, "--setting-sources", "project,local"]  # the last one wins
    assert any("agentArgs' --setting-sources are overridden" in n for n in inv.notes)


def test_inherit_an_agent_command_and_other_presets_add_nothing(tmp_path: Path) -> None:
    home = _home(tmp_path, {"apiKeyHelper": "h"})
    env = {"HOME": str(home)}
    inherit = build_invocation("claude", None, [], "p", PFILE, agent_user_config="inherit", env=env)
    assert "--setting-sources" not in inherit.argv and inherit.env == {}
    own = build_invocation("claude", ["my-claude", "{prompt}"], [], "p", PFILE, env=env)
    assert own.argv == ["my-claude", "p"] and own.env == {} and own.notes == []
    for agent in ("codex", "gemini"):
        inv = build_invocation(agent, None, [], "p", PFILE, agent_user_config="inherit", env=env)
        assert "--ignore-user-config" not in inv.argv and "-e" not in inv.argv, agent
        assert inv.notes == [f"agentUserConfig inherit: the agent uses your ~/.{agent}"]
    for agent in ("demo",):
        inv = build_invocation(agent, None, [], "p", PFILE, python="/py", env=env)
        # (Gemini's retry defaults file is the gemini preset's own, not the user's config)
        assert "--setting-sources" not in inv.argv and inv.notes == [], agent
        assert "CLAUDE_CODE_DISABLE_AUTO_MEMORY" not in inv.env, agent


def test_a_damaged_settings_file_passes_nothing_and_never_raises(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{not json")
    got = user_config("claude", "isolate", {"HOME": str(tmp_path)})
    assert got.args == ["--setting-sources", "project,local"]
    assert user_config("claude", "isolate", {}).args == ["--setting-sources", "project,local"]


def test_codex_login_is_passed_on_and_a_provider_secret_never_goes_on_the_command_line(
    tmp_path: Path,
) -> None:
    codex = tmp_path / ".codex"
    codex.mkdir()
    provider = '[model_providers.gw]\nname = "gw"\nbase_url = "https://gw.example/v1"\n'
    (codex / "config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "gw"\n[mcp_servers.a]\ncommand = "x"\n' + provider
    )
    inv = build_invocation("codex", None, [], "p", PFILE, env={"HOME": str(tmp_path)})
    tail = inv.argv[inv.argv.index("--ignore-user-config") :]
    assert tail == [
        "--ignore-user-config", "-c", 'model="gpt-5.5"', "-c", 'model_provider="gw"',
        "-c", 'model_providers.gw={"name"="gw","base_url"="https://gw.example/v1"}',
    ]  # fmt: skip
    assert "mcp_servers" not in " ".join(inv.argv)
    (codex / "config.toml").write_text(
        'model_provider = "gw"\n' + provider + 'experimental_bearer_token = "sk-secret"\n'
    )
    inv = build_invocation("codex", None, [], "p", PFILE, env={"HOME": str(tmp_path)})
    assert "sk-secret" not in " ".join(inv.argv) and "--ignore-user-config" not in inv.argv
    assert any("not isolated" in n and "experimental_bearer_token" in n for n in inv.notes)


def test_gemini_keeps_the_projects_mcp_servers_and_skills(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".gemini" / "skills" / "mine").mkdir(parents=True)
    (project / ".gemini" / "skills" / "mine" / "SKILL.md").write_text("---\nname: mine\n---\n")
    (project / ".gemini" / "settings.json").write_text(json.dumps({"mcpServers": {"p1": {}}}))
    for name in ("mine", "theirs"):
        skill = tmp_path / ".gemini" / "skills" / name / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(f"---\nname: {name}\n---\n")
    env = {"HOME": str(tmp_path), "GEMINI_CLI_SYSTEM_DEFAULTS_PATH": ""}
    inv = build_invocation("gemini", None, [], "p", PFILE, cwd=project, env=env)
    assert inv.argv[-4:] == ["-e", "none", "--allowed-mcp-server-names", "p1"]
    defaults = json.loads(inv.files[inv.env["GEMINI_CLI_SYSTEM_DEFAULTS_PATH"]])
    assert defaults["skills"] == {"disabled": ["theirs"]}
