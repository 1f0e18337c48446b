"""Stands in for `claude` on PATH: records its argv, checks one task, and prints Claude Code
stream-json in which one Bash call (`make build`) is refused by its permissions, as headless
Claude Code reports it (an error tool result, then the result's permission_denials)."""

from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from _common import read_prompt, record_spawn, tasks_file


def emit(obj: dict[str, object]) -> None:
    print(json.dumps(obj), flush=True)


prompt = read_prompt()
record_spawn(prompt)
path = tasks_file(prompt)
emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": "s", "tools": []})
use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make build"}}
emit({"type": "assistant", "message": {"content": [use]}})
refused = "Claude requested permissions to use Bash, but you haven't granted it yet."
result = {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True, "content": refused}
emit({"type": "user", "message": {"content": [result]}})
text = path.read_text(encoding="utf-8")
path.write_text(re.sub(r"^(\s*[-*+] )\[ \]", r"\1[x]", text, count=1, flags=re.M), "utf-8")
denial = {"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "make build"}}
emit(
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 2,
        "result": "checked one task",
        "permission_denials": [denial],
    }
)
