"""The scripted model as a reviewer (SPEC §13): what it answers when the prompt is a review's.

- turn 1: a `Read` of the task file the prompt names;
- turn 2: when the file has no `## Review` heading yet, an `Edit` that appends one unchecked
  task under a new `## Review` heading after the file's last line (the round rejects); when it
  has one, a closing text and no edit (the round approves);
- later turns: `end_turn`.

Standard library only, as the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROLE_MARKER = "Role: reviewer"
REVIEW_TASK = "- [ ] R.1 Scenario Scripted is not met: hello.py:1 (scripted reviewer)"

Plan = tuple[str, list[dict[str, Any]], str]


def is_review(first_user_text: str) -> bool:
    return ROLE_MARKER in first_user_text


def _last_line(path: str) -> str | None:
    try:
        lines = Path(path).read_text(encoding="utf-8").rstrip("\n").split("\n")
    except OSError:
        return None
    return lines[-1] if lines and lines[-1].strip() else None


def review_plan(turns: int, path: str | None, n: int) -> Plan:
    """(reply name, content blocks, stop_reason) of one review turn."""
    if path is None:
        return "no-path", [{"type": "text", "text": "No task file given."}], "end_turn"
    if turns == 0:
        read = {"type": "tool_use", "id": f"toolu_review{n:06d}r", "name": "Read"}
        return "review-read", [{**read, "input": {"file_path": path}}], "tool_use"
    if turns == 1:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        last = _last_line(path)
        if "## Review" in text or last is None:
            return (
                "review-approve",
                [{"type": "text", "text": "Every scenario is met."}],
                "end_turn",
            )
        edit = {
            "file_path": path,
            "old_string": last,
            "new_string": f"{last}\n\n## Review\n\n{REVIEW_TASK}",
        }
        block = {"type": "tool_use", "id": f"toolu_review{n:06d}e", "name": "Edit", "input": edit}
        return "review-edit", [block], "tool_use"
    return "review-done", [{"type": "text", "text": "Review written."}], "end_turn"
