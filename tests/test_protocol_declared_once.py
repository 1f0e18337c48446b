"""The custom commands' argument fields are declared once, in the server (server/args.py
FIELDS); the extension's typed mirror (editor-client/src/protocol.ts ServerCommands) must list
the same fields for every command it declares, so that a field added or renamed on one side only
fails here instead of being refused at run time."""

from __future__ import annotations

import re
from pathlib import Path

from ralph_lsp.server.args import FIELDS

PROTOCOL = Path(__file__).resolve().parents[1] / "editor-client" / "src" / "protocol.ts"


def interfaces(text: str) -> dict[str, set[str]]:
    """Field names of each `export interface X { … }` (one level, as protocol.ts writes them)."""
    found: dict[str, set[str]] = {}
    for m in re.finditer(r"export interface (\w+) \{(.*?)\n\}", text, re.S):
        found[m.group(1)] = set(re.findall(r"^\s+(\w+)\??:", m.group(2), re.M))
    return found


def mirrored_commands() -> dict[str, set[str]]:
    text = PROTOCOL.read_text()
    known = interfaces(text)
    block = re.search(r"export interface ServerCommands \{(.*?)\n\}", text, re.S)
    assert block is not None, "protocol.ts has no ServerCommands"
    out: dict[str, set[str]] = {}
    for m in re.finditer(r'"(ralph\.\w+)": \{\s*params: (.*?);\s*result:', block.group(1), re.S):
        fields: set[str] = set()
        for part in m.group(2).split("&"):
            part = part.strip()
            if part.startswith("{"):
                fields |= set(re.findall(r"(\w+)\??:", part))
            elif part in known:
                fields |= known[part]
            else:
                assert part.startswith("Record<string, never>"), f"{m.group(1)}: cannot read {part}"
        out[m.group(1)] = fields
    return out


def test_the_extension_mirrors_the_servers_command_fields() -> None:
    mirrored = mirrored_commands()
    assert mirrored, "no command found in protocol.ts: the reader needs updating"
    for command, fields in mirrored.items():
        assert command in FIELDS, f"protocol.ts declares {command}, which the server does not have"
        assert fields == set(FIELDS[command]), (command, sorted(fields), sorted(FIELDS[command]))


def test_the_reader_sees_what_is_there() -> None:
    # The reader itself, on a known shape: a field added on one side must show.
    assert mirrored_commands()["ralph.run"] >= {"change", "root", "guidance", "story"}


def test_the_run_states_are_one_enumeration_on_both_sides() -> None:
    """The server's RunState (policy.py) and the client's RunState union name the same words, so
    a state added or renamed on one side only fails here; the engine's status holds the enum."""
    from ralph_lsp.loop.engine import RunStatus
    from ralph_lsp.runs.states import RunState

    text = PROTOCOL.read_text()
    final = re.search(r"export const FINAL_STATES = \[(.*?)\] as const;", text)
    assert final is not None, "protocol.ts has no FINAL_STATES"
    client_final = set(re.findall(r'"(\w+)"', final.group(1)))
    assert re.search(r'export type RunState = "running" \| FinalState;', text)
    assert client_final == {s.value for s in RunState if s.final}
    assert RunState.RUNNING.value == "running"
    assert RunStatus.__annotations__["state"] == "RunState"
