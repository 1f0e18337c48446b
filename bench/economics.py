"""Economics with the real Claude Code CLI offline (SPEC §15; tests/claude_offline): how much
of each request the prompt cache can reuse, and what escalation saves per verified task.

- ``prompt_prefix_stable_ratio``: a 4-iteration ``ralph-lsp run``; for each model request after
  the first, the bytes it shares from its start with the request before it, over its size
  (the mean). A request is read as the API caches it: its tools, then its system prompt, then
  its messages (the CLI's JSON body puts messages first, but the cache keys on tools → system →
  messages), without cache breakpoints, a string content as its one text block.
- ``escalation_cost_per_verified_task_ratio``: the cost per verified task (as the CLI itself
  reports it) of a 3-story change where the small model cannot finish the hard story, run with
  ``--escalation small,large`` over the same run all on the large model (target < 1).
"""

from __future__ import annotations

import json
import tempfile
from itertools import pairwise
from pathlib import Path
from typing import Any

from bench.claude_home import _claude_bin
from bench.common import rnd
from bench.report import Results

SMALL, LARGE = "claude-haiku-4-5", "claude-opus-5-5"
THREE_STORIES = (
    "## 1. Parser\n\n- [ ] 1.1 The hard task: a parser\n\n"
    "## 2. Docs\n\n- [ ] 2.1 An easy task: the docs\n\n"
    "## 3. Help\n\n- [ ] 3.1 An easy task: the help text\n"
)


def _as_cached(value: Any) -> Any:
    """``value`` as the prompt cache compares it: without its ``cache_control`` marks (the CLI
    moves its breakpoint to the newest message each turn, and a breakpoint is no part of what
    the cache compares), and a message's string ``content`` as the one text block it is short
    for (the CLI sends its environment message as a list of one block in a conversation's
    first request, to mark it, and as a string after; the model reads the same prompt)."""
    if isinstance(value, dict):
        out = {k: _as_cached(v) for k, v in value.items() if k != "cache_control"}
        if "role" in out and isinstance(out.get("content"), str):
            out["content"] = [{"type": "text", "text": out["content"]}]
        return out
    if isinstance(value, list):
        return [_as_cached(v) for v in value]
    return value


def _cache_order(text: str) -> bytes:
    """A request body in the order the API caches it: tools, system, messages."""
    try:
        body = json.loads(text)
    except ValueError:
        return text.encode()
    parts = _as_cached([body.get("tools"), body.get("system"), body.get("messages")])
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":")).encode()


def _shared_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def prefix_ratios(bodies: list[str]) -> list[float]:
    """For each request after the first: its bytes shared from the start with the one before."""
    ordered = [_cache_order(t) for t in bodies]
    return [_shared_prefix(prev, cur) / len(cur) for prev, cur in pairwise(ordered) if cur]


def _prompt_ratios(bodies: list[str]) -> list[float]:
    """The prompt (the first message's text) of each iteration's first request, over the one of
    the iteration before: what ralph-lsp's own ordering keeps stable."""
    prompts: list[bytes] = []
    for text in bodies:
        try:
            messages = json.loads(text).get("messages") or []
        except ValueError:
            continue
        if sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant"):
            continue  # not the first turn of an iteration
        content = messages[0].get("content") if messages and isinstance(messages[0], dict) else ""
        blocks = content if isinstance(content, list) else [{"text": content}]
        prompts.append(
            "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict)).encode()
        )
    return [_shared_prefix(a, b) / len(b) for a, b in pairwise(prompts) if b]


def _run(claude: Path, base: Path, tasks: str | None, extra: list[str], **server: Any) -> Any:
    from tests.claude_offline.scripted_server import ScriptedModel
    from tests.claude_offline.test_real_claude import _project, ralph_run

    base.mkdir()
    change = _project(base, n_tasks=4)
    if tasks is not None:
        change.tasks.write_text(tasks, encoding="utf-8")
    with ScriptedModel(**server) as model:
        run = ralph_run(claude, model, change, base, extra=extra, timeout=300)
        bodies = [r.text for r in model.requests if r.method == "POST" and r.n_tools]
    return run, bodies


def _per_verified(run: Any) -> float | None:
    from ralph_lsp.runs.receipts import receipts_json

    record = (run.history.get("runs") or [{}])[0] if isinstance(run.history, dict) else {}
    costs = receipts_json(record)["costs"]
    value = costs.get("perVerifiedTaskUsd")
    return float(value) if isinstance(value, (int, float)) else None


def prefix_and_escalation(results: Results) -> None:
    """The two keys above, one run each (the escalation pair: two runs)."""
    claude = _claude_bin()
    keys = ("prompt_prefix_stable_ratio", "escalation_cost_per_verified_task_ratio")
    with tempfile.TemporaryDirectory(prefix="bench-economics-") as tmp:
        run, bodies = _run(claude, Path(tmp) / "prefix", None, ["--verify", "true"])
        ratios = prefix_ratios(bodies)
        if run.returncode != 0 or not ratios:
            results.skip(keys[:1], f"the 4-iteration run ended {run.returncode}: {run.last_line}")
        else:
            results.put(keys[0], rnd(sum(ratios) / len(ratios), 3), len(ratios))
            results.details["prompt_prefix"] = {
                "requests": len(bodies),
                "min": rnd(min(ratios), 3),
                "per_request": [rnd(r, 3) for r in ratios],
                # the prompt alone: each iteration's over the one before (its fixed part first)
                "prompt_only": [rnd(r, 3) for r in _prompt_ratios(bodies)],
            }
        flags = ["--verify", "true", "--escalate-after", "1"]
        unable = {"unable": {SMALL: "hard"}}
        esc, _ = _run(
            claude, Path(tmp) / "esc", THREE_STORIES, [*flags, "--escalation", f"{SMALL},{LARGE}"],
            **unable,
        )  # fmt: skip
        big, _ = _run(
            claude, Path(tmp) / "big", THREE_STORIES, [*flags, "--model", LARGE], **unable
        )
    per_esc, per_big = _per_verified(esc), _per_verified(big)
    results.details["escalation"] = {
        "escalation_per_verified_task_usd": per_esc,
        "all_large_per_verified_task_usd": per_big,
        "exit_codes": [esc.returncode, big.returncode],
        "models": f"{SMALL} (cannot finish the hard story), then {LARGE}",
    }
    if per_esc is None or not per_big:
        results.skip(
            keys[1:], f"no cost per verified task (exit {esc.returncode}, {big.returncode})"
        )
        return
    results.put(keys[1], rnd(per_esc / per_big, 3), 1)
