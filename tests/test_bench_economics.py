"""The prompt-prefix measure of ``bench/economics.py`` reads requests as the prompt cache does."""

from __future__ import annotations

import json

from bench.economics import prefix_ratios


def _body(env: object, *turns: str) -> str:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "the prompt " * 50}]},
        {"role": "system", "content": env},
        *({"role": "assistant", "content": t} for t in turns),
    ]
    return json.dumps({"messages": messages, "system": "s" * 100, "tools": [{"name": "Read"}]})


def test_a_string_content_is_the_one_text_block_it_stands_for() -> None:
    text = "# Environment\n" + "x" * 2000
    first = _body([{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}])
    second = _body(text, "I'll read the task list first.")
    (ratio,) = prefix_ratios([first, second])
    assert ratio > 0.95  # only the new turn differs


def test_a_changed_environment_message_still_breaks_the_prefix() -> None:
    first = _body("# Environment\n" + "x" * 2000)
    second = _body("# Environment\n" + "y" * 2000, "next")
    (ratio,) = prefix_ratios([first, second])
    assert ratio < 0.4
