"""The scripted model as a planner (SPEC §14): what it answers when the prompt is a planning one.

The prompt names the change folder (`Planning change folder: <path>`) and the change's current
problems, as the gate reports them. By what the prompt says of the change now:

- it holds no artifact yet: one `Write` a turn of `proposal.md`, the delta spec
  `specs/reverse/spec.md`, `design.md` and `tasks.md`, then `end_turn`. The draft fails strict
  validation in one named way: its first requirement states neither SHALL nor MUST;
- a problem names SHALL or MUST: a `Read` of the delta spec (the CLI's Edit tool refuses a file
  not read first), then an `Edit` that puts the SHALL in, then `end_turn`;
- anything else: `end_turn` with no tool call.

Standard library only, as the server.
"""

from __future__ import annotations

import re
from typing import Any

PLAN_MARKER = "Planning change folder: "
EMPTY = "The change folder holds no artifact yet."
CAPABILITY = "reverse"
WITHOUT_SHALL = "The toolbox reverses a string."
WITH_SHALL = "The toolbox SHALL reverse a string, keeping combining marks with their letter."
OPEN_QUESTION = "Should emoji be kept whole?"

PROPOSAL = (
    "## Why\nNothing in the toolbox reverses a string; callers each write their own, and each"
    " breaks combining marks.\n\n## What Changes\n- Add `toolbox.reverse(text)`.\n\n"
    f"## Impact\n- Affected specs: {CAPABILITY} (new)\n- Affected code: toolbox/\n"
)
SPEC = (
    "## ADDED Requirements\n\n### Requirement: Reverse a string\n"
    f"{WITHOUT_SHALL}\n\n#### Scenario: A plain word\n"
    "- **WHEN** `reverse` is given `abc`\n- **THEN** it returns `cba`\n\n"
    "### Requirement: Keep combining marks\n"
    "The toolbox MUST keep a combining mark after the letter it belongs to.\n\n"
    "#### Scenario: An accent\n- **WHEN** `reverse` is given `e\\u0301a`\n"
    "- **THEN** it returns `ae\\u0301`\n"
)
DESIGN = (
    "## Context\nThe toolbox is a small library of string helpers.\n\n## Decisions\n"
    "- Reverse grapheme clusters approximated as a letter and its combining marks.\n\n"
    f"## Open Questions\n- {OPEN_QUESTION}\n"
)
TASKS = (
    "## 1. Reverse\n\n- [ ] 1.1 Add `toolbox.reverse` for plain strings\n"
    "- [ ] 1.2 Keep combining marks with their letter\n- [ ] 1.3 Test both scenarios\n"
)
DRAFT = (
    ("proposal.md", PROPOSAL),
    (f"specs/{CAPABILITY}/spec.md", SPEC),
    ("design.md", DESIGN),
    ("tasks.md", TASKS),
)

Plan = tuple[str, list[dict[str, Any]], str]


def is_plan(first_user_text: str) -> bool:
    return PLAN_MARKER in first_user_text


def _folder(prompt: str) -> str | None:
    m = re.search(rf"^{re.escape(PLAN_MARKER)}(/.+)$", prompt, re.M)
    return m.group(1).rstrip() if m else None


def _tool(n: int, turn: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_plan{n:06d}{turn}", "name": name, "input": args}


def names_missing_shall(prompt: str) -> bool:
    """Whether the prompt's state of the change names the missing SHALL or MUST."""
    return any(
        line.startswith("- ") and "SHALL or MUST" in line and "Reverse a string" in line
        for line in prompt.splitlines()
    )


def plan_turn(turns: int, prompt: str, n: int) -> Plan:
    """(reply name, content blocks, stop_reason) of one planning turn."""
    folder = _folder(prompt)
    if folder is None:
        return "plan-no-folder", [{"type": "text", "text": "No change folder given."}], "end_turn"
    spec = f"{folder}/specs/{CAPABILITY}/spec.md"
    if EMPTY in prompt:
        if turns < len(DRAFT):
            rel, content = DRAFT[turns]
            write = _tool(n, turns, "Write", {"file_path": f"{folder}/{rel}", "content": content})
            return f"plan-write:{rel}", [write], "tool_use"
        return "plan-drafted", [{"type": "text", "text": "The draft is written."}], "end_turn"
    if names_missing_shall(prompt):
        if turns == 0:
            return "plan-read", [_tool(n, 0, "Read", {"file_path": spec})], "tool_use"
        if turns == 1:
            edit = {"file_path": spec, "old_string": WITHOUT_SHALL, "new_string": WITH_SHALL}
            return "plan-fix", [_tool(n, 1, "Edit", edit)], "tool_use"
        return "plan-fixed", [{"type": "text", "text": "The requirement says SHALL."}], "end_turn"
    return "plan-nothing", [{"type": "text", "text": "Nothing to fix."}], "end_turn"
