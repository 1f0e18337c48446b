"""Every setting is declared once, in ralph_lsp/settings.py, and the extension's package.json
contribution and its TypeScript mirror (editor-client/src/config.ts) agree with it: a setting
on one side only, a different default, or a different choice list fails here."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp import cli
from ralph_lsp.cli import flags as cli_flags
from ralph_lsp.cli import parser as cli_parser
from ralph_lsp.settings import (
    CONFORMANCE_REQUIRES,
    ISOLATIONS,
    MACHINE_SETTINGS,
    PRESETS,
    PROGRAM_SETTINGS,
    RUNNERS,
    SANDBOXES,
    SCOPES,
    SETTING_NAMES,
    USER_CONFIGS,
    VERIFY_WHEN,
    Settings,
    settings_from_dict,
)

CLIENT = Path(__file__).resolve().parents[1] / "editor-client"
CLIENT_ONLY = ("server.", "trace.")  # settings of the extension itself, not the server's


def contributed() -> dict[str, dict[str, Any]]:
    package = json.loads((CLIENT / "package.json").read_text())
    props = package["contributes"]["configuration"]["properties"]
    return {k.removeprefix("ralph."): v for k, v in props.items()}


def server_side(props: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in props.items() if not k.startswith(CLIENT_ONLY)}


# Settings VS Code holds inside another one's object: `ralph.sandbox` is "auto"/"off" or
# {mode, allowWrite, denyRead, allowedDomains}, since VS Code cannot hold a string at a key that
# prefixes others (it would drop `ralph.sandbox.allowWrite`); the client flattens it (config.ts).
NESTED = {k: k.partition(".")[0] for k in SETTING_NAMES if k.startswith("sandbox.")}


def owner(key: str) -> str:
    """The contributed setting that holds ``key``."""
    return NESTED.get(key, key)


def test_package_json_declares_exactly_the_servers_settings() -> None:
    assert sorted(server_side(contributed())) == sorted({owner(k) for k in SETTING_NAMES})
    # No declared key is a prefix of another: VS Code's nested value tree could not hold both.
    declared = list(contributed())
    clashes = [(a, b) for a in declared for b in declared if b.startswith(a + ".")]
    assert clashes == []


def test_ralph_sandbox_is_a_mode_or_an_object_of_the_servers_sub_settings() -> None:
    prop = contributed()["sandbox"]
    forms = {form["type"]: form for form in prop["anyOf"]}
    assert forms["string"]["enum"] == list(SANDBOXES)
    assert sorted(forms["object"]["properties"]) == sorted(
        ["mode"] + [k.partition(".")[2] for k in NESTED]
    )
    assert forms["object"]["properties"]["mode"]["enum"] == list(SANDBOXES)
    for key in NESTED:  # each list of the object reads back as the server's sub-setting
        part = key.partition(".")[2]
        sub = forms["object"]["properties"][part]
        assert sub["type"] == "array" and sub["items"] == {"type": "string"}, key
        nested, warnings = settings_from_dict({"sandbox": {part: ["x"]}})
        flat, _ = settings_from_dict({key: ["x"]})
        assert warnings == [] and nested == flat != Settings(), key
    assert "ralph.sandbox.allowWrite" in prop["markdownDescription"]  # the flat keys still work


def test_the_typescript_mirror_lists_exactly_the_servers_settings() -> None:
    source = (CLIENT / "src" / "config.ts").read_text()
    block = re.search(r"SERVER_SETTING_KEYS = \[(.*?)\] as const", source, re.S)
    assert block is not None
    assert sorted(re.findall(r'"([\w.]+)"', block.group(1))) == sorted(SETTING_NAMES)


def test_defaults_and_choices_agree() -> None:
    defaults = Settings()
    for key, prop in server_side(contributed()).items():
        if key == "agentCommand":  # [] is the client's "use the preset": config.ts leaves it out
            assert prop["default"] == [] and defaults.agent_command is None
            continue
        # The contributed default, read by the server, is the server's own default.
        parsed, warnings = settings_from_dict({key: prop["default"]})
        assert warnings == [] and parsed == defaults, (key, warnings)
        if "enum" in prop:
            _, warnings = settings_from_dict({key: "not-a-choice"})
            assert warnings and all(repr(c) in warnings[0] for c in prop["enum"]), key


def test_scopes_follow_vscodes_conventions() -> None:
    # `resource` for per-project settings, so User settings apply in remote windows too;
    # `machine-overridable` only for a path on one machine.
    scopes = {k: v.get("scope") for k, v in contributed().items()}
    assert scopes.pop("server.pythonPath") == "machine-overridable"
    assert scopes.pop("trace.server") == "window"
    assert scopes.pop("server.importStrategy") == "resource"
    # A command run when a run ends, where runs execute (SPEC §9): the user's, never a
    # workspace's. `application`, not `machine`: a remote window (code-server, SSH, containers)
    # ignores a `machine` setting in the User settings (VS Code reads only the remote's Machine
    # settings for it), and a workspace cannot set either.
    for key in {owner(k) for k in MACHINE_SETTINGS}:
        assert scopes.pop(key) == "application", key
    assert set(scopes.values()) == {"resource"}, scopes


def test_program_settings_are_restricted_in_untrusted_workspaces() -> None:
    package = json.loads((CLIENT / "package.json").read_text())
    restricted = package["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]
    assert sorted(restricted) == sorted(
        [
            *{f"ralph.{owner(k)}" for k in PROGRAM_SETTINGS},
            "ralph.server.pythonPath",
            "ralph.server.importStrategy",
        ]
    )


def run_flags() -> dict[str, argparse.Action]:
    parser = cli_parser.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in sub.choices["run"]._actions}


def test_the_cli_flags_set_declared_settings_with_the_same_choices() -> None:
    # The CLI's flag mapping names settings of the one declaration, and a flag with choices
    # offers exactly the setting's choices (the same tuple, not a copy that can drift).
    flags = run_flags()
    assert cli_flags._FLAG_SETTINGS, (
        "the CLI maps no flag to a setting: the test reads the wrong place"
    )
    for attr, key in cli_flags._FLAG_SETTINGS:
        assert key in SETTING_NAMES, (attr, key)
        assert attr in flags, f"--{attr.replace('_', '-')} is mapped but not a flag of run"
    choices = {"agent": PRESETS, "scope": SCOPES, "verify_when": VERIFY_WHEN}
    choices["isolation"] = ISOLATIONS
    choices["agent_user_config"] = USER_CONFIGS
    choices["runner"] = RUNNERS
    choices["sandbox"] = SANDBOXES
    choices["conformance"] = CONFORMANCE_REQUIRES
    with_choices = {dest for dest, a in flags.items() if a.choices and dest != "help"}
    assert with_choices == set(choices), with_choices
    for dest, declared in choices.items():
        assert flags[dest].choices is declared, dest


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--max-iterations", "0", "--max-iterations: expected a whole number of at least 1, got 0"),
        ("--stuck-after", "-1", "--stuck-after: expected a whole number of at least 1, got -1"),
        ("--max-cost", "0", "--max-cost: expected a number greater than 0, got 0.0"),
        ("--iteration-timeout", "nan", "--iteration-timeout: expected a number greater than 0"),
        ("--stop-grace", "-1", "--stop-grace: expected a number of at least 0, got -1.0"),
    ],
)
def test_a_flag_is_checked_as_its_setting_and_the_error_names_the_flag(
    flag: str, value: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "openspec" / "changes" / "c").mkdir(parents=True)
    (tmp_path / "openspec" / "changes" / "c" / "tasks.md").write_text("- [ ] 1.1 a\n")
    with pytest.raises(SystemExit) as ended:
        cli.main(["run", "c", "--root", str(tmp_path), "--agent", "demo", flag, value])
    assert ended.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"ralph-lsp: error: {expected}"), line
    assert "(default" not in line and "ralph." not in line  # the flag, not the setting
    assert not (tmp_path / ".ralph").exists()  # no run, no record
