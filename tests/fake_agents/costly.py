"""Checks every task of tasks.md in one spawn and reports a cost of $FAKE_COST (Claude's
stream-json ``result``), so budgets can be tested without an API."""

from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn, tasks_file

prompt = read_prompt()
record_spawn(prompt)
path = tasks_file(prompt)
text = path.read_text(encoding="utf-8")
new = re.sub(r"^(\s*[-*+] )\[ \]", r"\1[x]", text, flags=re.M)
tmp = path.with_name(".tasks.md.tmp")
tmp.write_text(new, encoding="utf-8")
os.replace(tmp, path)
cost = float(os.environ.get("FAKE_COST", "0.5"))
result = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "result": "done",
    "total_cost_usd": cost,
    "num_turns": 1,
    "duration_ms": 10,
}
print(json.dumps(result), flush=True)
