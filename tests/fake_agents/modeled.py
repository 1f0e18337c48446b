"""A fake Claude Code whose work depends on its ``--model``: it checks the first unchecked task
only when the model is one of $FAKE_ABLE_MODELS (comma-separated; unset: every model), and
prints Claude's stream-json (init, one assistant message, a result with usage and modelUsage).

Its cost: $FAKE_PRICES ``model=USD,...`` per spawn as ``total_cost_usd`` (a model not named
there, or FAKE_PRICES unset: no cost at all, only tokens: $FAKE_TOKENS ``in,cached,write,out``).
Every spawn is logged to $FAKE_AGENT_LOG with its argv and prompt (``_common.record_spawn``).
"""

from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn, tasks_file

args = sys.argv[1:]
model = args[args.index("--model") + 1] if "--model" in args else "default-model"
prompt = read_prompt()
record_spawn(prompt)
able = [m for m in os.environ.get("FAKE_ABLE_MODELS", "").split(",") if m]
checked = 0
if not able or model in able:
    path = tasks_file(prompt)
    text = path.read_text(encoding="utf-8")
    new, checked = re.subn(r"^(\s*[-*+] )\[ \]", r"\1[x]", text, count=1, flags=re.M)
    if checked:
        tmp = path.with_name(".tasks.md.tmp")
        tmp.write_text(new, encoding="utf-8")
        os.replace(tmp, path)
fresh, cached, write, out = (int(x) for x in os.environ.get("FAKE_TOKENS", "100,0,0,10").split(","))
prices = dict(p.split("=") for p in os.environ.get("FAKE_PRICES", "").split(",") if "=" in p)


def emit(obj: dict[str, object]) -> None:
    print(json.dumps(obj), flush=True)


emit({"type": "system", "subtype": "init", "model": model, "cwd": os.getcwd()})
said = "checked one task" if checked else "could not do it"
emit(
    {"type": "assistant", "message": {"model": model, "content": [{"type": "text", "text": said}]}}
)
usage = {
    "input_tokens": fresh,
    "cache_read_input_tokens": cached,
    "cache_creation_input_tokens": write,
    "output_tokens": out,
}
result: dict[str, object] = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "num_turns": 1,
    "result": said,
    "usage": usage,
    "modelUsage": {model: {"inputTokens": fresh, "outputTokens": out}},
}
if model in prices:
    result["total_cost_usd"] = float(prices[model])
emit(result)
