"""Every setting is declared once, in ralph_lsp/settings.py, and the extension's package.json
contribution and its TypeScript mirror (editor-client/src/config.ts) agree with it: a setting
on one side only, a different default, or a different choice list fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ralph_lsp.settings import PROGRAM_SETTINGS, SETTING_NAMES, Settings, settings_from_dict

CLIENT = Path(__file__).resolve().parents[1] / "editor-client"
CLIENT_ONLY = ("server.", "trace.")  # settings of the extension itself, not the server's


def contributed() -> dict[str, dict[str, Any]]:
    package = json.loads((CLIENT / "package.json").read_text())
    props = package["contributes"]["configuration"]["properties"]
    return {k.removeprefix("ralph."): v for k, v in props.items()}


def server_side(props: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in props.items() if not k.startswith(CLIENT_ONLY)}


def test_package_json_declares_exactly_the_servers_settings() -> None:
    assert sorted(server_side(contributed())) == sorted(SETTING_NAMES)


def test_the_typescript_mirror_lists_exactly_the_servers_settings() -> None:
    source = (CLIENT / "src" / "config.ts").read_text()
    block = re.search(r"SERVER_SETTING_KEYS = \[(.*?)\] as const", source, re.S)
    assert block is not None
    assert sorted(re.findall(r'"(\w+)"', block.group(1))) == sorted(SETTING_NAMES)


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
    assert set(scopes.values()) == {"resource"}, scopes


def test_program_settings_are_restricted_in_untrusted_workspaces() -> None:
    package = json.loads((CLIENT / "package.json").read_text())
    restricted = package["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]
    assert sorted(restricted) == sorted(
        [f"ralph.{k}" for k in PROGRAM_SETTINGS]
        + ["ralph.server.pythonPath", "ralph.server.importStrategy"]
    )
