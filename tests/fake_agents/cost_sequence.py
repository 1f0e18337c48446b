"""Checks the first unchecked task of tasks.md per spawn and reports the next cost of
$FAKE_COSTS (comma-separated, the last repeated) in Claude's stream-json ``result``: a custom
agent whose reported cost can be anything, even negative. Spawns are counted in $FAKE_COUNTER."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn, tasks_file

prompt = read_prompt()
record_spawn(prompt)
counter = Path(os.environ["FAKE_COUNTER"])
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
costs = [float(c) for c in os.environ["FAKE_COSTS"].split(",")]
path = tasks_file(prompt)
text = path.read_text(encoding="utf-8")
new, checked = re.subn(r"^(\s*[-*+] )\[ \]", r"\1[x]", text, count=1, flags=re.M)
if checked:
    tmp = path.with_name(".tasks.md.tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, path)
result = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "result": "checked one task",
    "total_cost_usd": costs[min(n, len(costs) - 1)],
    "num_turns": 1,
    "duration_ms": 10,
}
print(json.dumps(result), flush=True)
