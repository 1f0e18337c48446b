"""A MODIFIED requirement block's scenarios compared with the current block's: which names
each has that the other lacks (a name counted as often as it appears), and the sentence on
their balance that validation's scenario-loss error and archive's refusal both add; the
authoring quick fix that copies omitted scenarios back asks it too. `blocks.py` reads the
blocks; this compares what it read.
"""

from __future__ import annotations

import functools

from ralph_lsp.openspec.validation.blocks import Block, ci_prefix
from ralph_lsp.openspec.validation.text import (
    JS_WS_CHARS,
    drop_closing_run,
    fence_mask,
    hashes_then_space,
    normalize_newlines,
    trim,
)


def _scenario_name(line: str) -> str:
    """The name of a scenario header (`line` is one: `hashes_then_space(line, 4, 4)`): the
    header's `^####S+`, closing run and `^Scenario:S*` (any ASCII case) dropped, trimmed."""
    name = drop_closing_run(line[4:].lstrip(JS_WS_CHARS))
    return trim(name[9:] if ci_prefix(name, "scenario:") else name)


@functools.lru_cache(maxsize=1024)
def scenario_names(raw: str) -> list[str]:
    """A block's scenario names, cached by its text: an edit compares the same unchanged
    blocks with their main specs again (callers must not modify the list)."""
    lines = normalize_newlines(raw).split("\n")
    mask = fence_mask(lines)
    return [
        _scenario_name(line)
        for i, line in enumerate(lines)
        if not mask[i] and hashes_then_space(line, 4, 4)
    ]


class ScenarioDiff:
    __slots__ = ("added", "current_count", "incoming_count", "missing")

    def __init__(
        self, missing: list[str], added: list[str], current_count: int, incoming_count: int
    ) -> None:
        self.missing, self.added = missing, added
        self.current_count, self.incoming_count = current_count, incoming_count


def _unmatched(names: list[str], against: list[str]) -> list[str]:
    remaining: dict[str, int] = {}
    for name in against:
        remaining[name] = remaining.get(name, 0) + 1
    out = []
    for name in names:
        if remaining.get(name, 0) > 0:
            remaining[name] -= 1
        else:
            out.append(name)
    return out


def diff_scenarios(current: Block, incoming: Block) -> ScenarioDiff:
    cur, inc = scenario_names(current.raw), scenario_names(incoming.raw)
    return ScenarioDiff(_unmatched(cur, inc), _unmatched(inc, cur), len(cur), len(inc))


def describe_balance(diff: ScenarioDiff) -> str:
    def count(n: int) -> str:
        return f"{n} {'scenario' if n == 1 else 'scenarios'}"

    incoming, current = count(diff.incoming_count), count(diff.current_count)
    scale = f"The modified block has {incoming}; the current spec has {current}."
    if not diff.added:
        return f"{scale} It adds none."
    listed = ", ".join(f'"{n}"' for n in diff.added[:3])
    rest = len(diff.added) - 3
    names = f"{listed} and {rest} more" if rest > 0 else listed
    return f"{scale} It adds {count(len(diff.added))} not in the current spec: {names}."
