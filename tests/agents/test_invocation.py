"""Preset argv building, placeholder substitution and the stdin rule (SPEC §4)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ralph_lsp.agents import (
    DEFAULT_AGENT_ARGS,
    PACKAGE_PARENT,
    PRESETS,
    RUN_DEMO_AGENT,
    Invocation,
    build_invocation,
    make_parser,
    verify_rules,
)
from ralph_lsp.agents.claude import ClaudeParser
from ralph_lsp.agents.codex import CodexParser
from ralph_lsp.agents.gemini import GeminiParser
from ralph_lsp.agents.plain import PlainParser

PROMPT = "Do the work.\nTasks file: /x/tasks.md"
PFILE = Path("/x/run/prompt.md")
ARGS = list(DEFAULT_AGENT_ARGS)


def build(
    agent: str, command: list[str] | None = None, args: list[str] | None = None
) -> Invocation:
    return build_invocation(
        agent, command, ARGS if args is None else args, PROMPT, PFILE, python="/py", env={}
    )


def test_presets_are_the_spec_list() -> None:
    assert PRESETS == ("claude", "codex", "gemini", "demo", "custom")
    assert DEFAULT_AGENT_ARGS == ("--permission-mode", "acceptEdits")


def test_claude_preset_with_agent_args() -> None:
    inv = build("claude")
    assert inv.argv == [
        "claude", "-p", PROMPT, "--output-format", "stream-json", "--verbose",
        "--permission-mode", "acceptEdits",
        "--setting-sources", "project,local",  # agentUserConfig isolate, after agentArgs
    ]  # fmt: skip
    assert inv.env == {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}
    assert inv.stdin_data is None and isinstance(inv.parser, ClaudeParser)
    assert build("claude", args=[]).argv[-3] == "--verbose"
    inherit = build_invocation(
        "claude", None, ARGS, PROMPT, PFILE, agent_user_config="inherit", env={}
    )
    assert inherit.argv[-3:] == ["--verbose", *ARGS] and inherit.env == {}


CODEX = ["codex", "exec", "--json", "--sandbox", "workspace-write"]
GEMINI = ["gemini", "-p", "-o", "stream-json", "--approval-mode", "auto_edit"]
NO_HOME = {"HOME": "/nonexistent-home"}


def test_codex_and_gemini_take_agent_args_after_their_own() -> None:
    """ralph.agentArgs reach codex and gemini too, after the preset's arguments (issue 29);
    the default (Claude flags) goes to claude only."""
    extra = ["--model", "m1"]
    codex = build_invocation("codex", None, extra, PROMPT, PFILE, env=NO_HOME).argv
    # then agentUserConfig isolate's own flags, which agentArgs cannot drop
    assert codex == [
        *CODEX, PROMPT, "--disable", "unbounded_connection_retries", *extra, "--ignore-user-config"
    ]  # fmt: skip
    gemini = build_invocation("gemini", None, extra, PROMPT, PFILE, env=NO_HOME).argv
    assert gemini[-4:] == [*extra, "-e", "none"] and gemini[:3] == ["gemini", "-p", gemini[2]]
    assert gemini[2].startswith(PROMPT)  # plus the note on build files
    for agent in ("codex", "gemini"):
        argv = build_invocation(agent, None, ARGS, PROMPT, PFILE, env=NO_HOME).argv
        assert "--permission-mode" not in argv
    demo = build("demo", args=["--permission-mode", "plan", "--weird"]).argv
    assert demo == [
        *("/py", "-c", RUN_DEMO_AGENT, PACKAGE_PARENT),
        *("-p", PROMPT, "--output-format", "stream-json"),
    ]
    assert isinstance(build("codex").parser, CodexParser)
    assert isinstance(build("gemini").parser, GeminiParser)


def test_codex_user_config_wins_over_the_retry_flag(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    home.mkdir()
    env = {"CODEX_HOME": str(home)}
    argv = build_invocation("codex", None, [], PROMPT, PFILE, env=env).argv
    assert argv[-3:] == ["--disable", "unbounded_connection_retries", "--ignore-user-config"]
    (home / "config.toml").write_text(
        'model = "x"\n\n[features]\nunbounded_connection_retries = true # mine\n'
    )
    argv = build_invocation("codex", None, [], PROMPT, PFILE, env=env).argv
    assert "--disable" not in argv
    # isolate drops the user's config.toml, so their own setting is passed on with -c
    feature = "features.unbounded_connection_retries=true"
    assert argv[-5:] == ["--ignore-user-config", "-c", 'model="x"', "-c", feature]


def test_gemini_gets_a_policy_and_a_low_retry_default_the_user_can_override() -> None:
    inv = build_invocation("gemini", None, [], PROMPT, PFILE, env=NO_HOME)
    policy = inv.argv[inv.argv.index("--policy") + 1]
    assert policy in inv.files and "--allowed-tools" not in inv.argv
    defaults = inv.env["GEMINI_CLI_SYSTEM_DEFAULTS_PATH"]
    assert '"maxAttempts": 2' in inv.files[defaults]
    mine = {"GEMINI_CLI_SYSTEM_DEFAULTS_PATH": "/etc/mine.json"}
    inv = build_invocation("gemini", None, [], PROMPT, PFILE, env=mine)
    assert inv.env == {} and list(inv.files) == [policy]


def test_demo_defaults_to_this_interpreter() -> None:
    inv = build_invocation("demo", None, [], "p", PFILE)
    assert inv.argv[0] == sys.executable


def test_custom_needs_a_command() -> None:
    commands: list[list[str] | None] = [None, []]
    for command in commands:
        with pytest.raises(ValueError, match="agentCommand"):
            build("custom", command)


def test_unknown_agent_is_refused_with_the_known_names() -> None:
    with pytest.raises(ValueError, match=r"unknown agent 'nope' \(known: claude, codex"):
        build("nope")
    with pytest.raises(ValueError):
        make_parser("nope")


def test_custom_without_placeholder_sends_the_prompt_on_stdin() -> None:
    inv = build("custom", ["my-agent", "--fast"])
    assert inv.argv == ["my-agent", "--fast"]
    assert inv.stdin_data == PROMPT.encode()
    assert isinstance(inv.parser, PlainParser)


def test_prompt_file_placeholder() -> None:
    inv = build("custom", ["wrap", "--file={promptFile}", "x"])
    assert inv.argv == ["wrap", f"--file={PFILE}", "x"]
    assert inv.stdin_data is None


def test_prompt_placeholder_inside_an_element() -> None:
    inv = build("custom", ["wrap", "--prompt={prompt}"])
    assert inv.argv == ["wrap", f"--prompt={PROMPT}"]
    assert inv.stdin_data is None


def test_command_overrides_a_preset_but_keeps_its_parser() -> None:
    inv = build("claude", ["/opt/bin/claude-wrapper", "{prompt}"])
    assert inv.argv == ["/opt/bin/claude-wrapper", PROMPT]  # no agent_args added
    assert isinstance(inv.parser, ClaudeParser)
    inv = build("codex", ["codex-nightly", "exec"])
    assert inv.stdin_data == PROMPT.encode() and isinstance(inv.parser, CodexParser)


def test_substitution_is_one_pass_and_literal() -> None:
    prompt = "use {promptFile} and {prompt} and \\1 and $HOME"
    inv = build_invocation("custom", ["a", "{prompt}", "{promptFile}{prompt}"], [], prompt, PFILE)
    assert inv.argv == ["a", prompt, f"{PFILE}{prompt}"]


def test_no_shell_ever() -> None:
    inv = build("custom", ["echo", "$(rm -rf /)", "; ls"])
    assert inv.argv == ["echo", "$(rm -rf /)", "; ls"]


def test_each_invocation_gets_a_fresh_parser() -> None:
    assert build("claude").parser is not build("claude").parser


def test_command_must_hold_strings() -> None:
    with pytest.raises(ValueError):
        build("custom", ["ok", 5])  # type: ignore[list-item]


def test_non_utf8_safe_stdin() -> None:
    inv = build_invocation("custom", ["x"], [], "caf\u00e9 \ud800", PFILE)
    assert inv.stdin_data == "caf\u00e9 ?".encode()


# -- the agent may run the verification commands (SPEC §4 v2) --------------------------------


def test_each_preset_grants_the_verification_commands_and_allowed_tools_only() -> None:
    rules = [*verify_rules(["make test", "  pnpm test  ", ""]), "Bash(npm run build:*)", "Edit"]
    assert rules == ["Bash(make test:*)", "Bash(pnpm test:*)", "Bash(npm run build:*)", "Edit"]

    def argv(agent: str, command: list[str] | None = None) -> list[str]:
        inv = build_invocation(
            agent, command, ARGS, PROMPT, PFILE, python="/py", allowed_tools=rules, env={}
        )
        return inv.argv

    claude = argv("claude")
    # After the preset and agentArgs (still acceptEdits: no blanket bypass), the rules as listed.
    assert claude[claude.index("--allowedTools") :] == ["--allowedTools", *rules]
    assert claude[: claude.index("--allowedTools")][-4:] == [
        *ARGS,
        "--setting-sources",
        "project,local",
    ]
    assert "--dangerously-skip-permissions" not in claude and "bypassPermissions" not in claude
    gemini = build_invocation(
        "gemini", None, ARGS, PROMPT, PFILE, python="/py", allowed_tools=rules
    )
    policy = gemini.files[gemini.argv[gemini.argv.index("--policy") + 1]]
    assert 'commandPrefix = ["make test", "pnpm test", "npm run build"]' in policy
    assert "Edit" not in policy
    assert "--allowedTools" not in argv("codex") and "--allowed-tools" not in argv("codex")
    assert argv("custom", ["my-agent", "{prompt}"]) == ["my-agent", PROMPT]  # used as written
    # An agentCommand naming a known CLI keeps the rules.
    assert argv("claude", ["/opt/bin/claude", "-p", "{prompt}"])[3:] == ["--allowedTools", *rules]
    assert "--policy" in argv("gemini", ["gemini", "-p", "{prompt}"])
    assert "--allowedTools" not in argv("demo")
    # Nothing to grant: the argv is the preset's own.
    assert (
        build("claude").argv
        == build_invocation(
            "claude", None, ARGS, PROMPT, PFILE, python="/py", allowed_tools=[], env={}
        ).argv
    )
