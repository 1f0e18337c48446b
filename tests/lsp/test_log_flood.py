"""LogBatcher under a flood: long multi-line texts keep their lines, drops count lines, and a
backlog goes out a few messages per turn of the loop rather than a few per tick."""

from __future__ import annotations

import asyncio
import time

from lsprotocol.types import MessageType

from ralph_lsp.server.logs import MAX_LINE, LogBatcher


def test_a_long_text_of_many_lines_is_kept_whole() -> None:
    sent: list[str] = []
    batcher = LogBatcher(lambda level, text: sent.append(text))
    text = "\n".join(f"line {i}" for i in range(10_000))
    assert len(text) > MAX_LINE
    batcher.add(text)
    batcher.flush()
    assert "\n".join(sent) == text


def test_only_the_lines_too_long_are_cut() -> None:
    sent: list[str] = []
    batcher = LogBatcher(lambda level, text: sent.append(text))
    batcher.add("\n".join(["a", "x" * (MAX_LINE + 5), "b", "y" * MAX_LINE]))
    batcher.flush()
    lines = "\n".join(sent).split("\n")
    assert lines == ["a", "x" * MAX_LINE + "… [5 more characters]", "b", "y" * MAX_LINE]


def test_the_drop_notice_counts_lines() -> None:
    sent: list[tuple[MessageType, str]] = []
    batcher = LogBatcher(lambda level, text: sent.append((level, text)), max_backlog=1000)
    for i in range(10):
        batcher.add("\n".join(f"{i}-{j:04d}" for j in range(100)))  # 700 characters each
    batcher.flush()
    assert sent[0] == (
        MessageType.Warning,
        "[ralph: 900 log lines dropped: output came faster than it could be shown]",
    )
    assert sent[1][1].split("\n") == [f"9-{j:04d}" for j in range(100)]


async def test_a_backlog_goes_out_turn_by_turn_not_tick_by_tick() -> None:
    sent: list[str] = []
    batcher = LogBatcher(
        lambda level, text: sent.append(text), delay=0.1, max_message=1000, max_per_flush=2
    )
    lines = [f"flood {i:05d}" for i in range(10_000)]  # about 120 messages
    for line in lines:
        batcher.add(line)
    # A delay after every two messages would take 6 s; after the first delay, the backlog goes
    # on at every turn of the loop, and other work (requests) runs between those turns.
    seen: list[int] = []
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        seen.append(len(sent))
        if sum(text.count("\n") + 1 for text in sent) == len(lines):
            break
        await asyncio.sleep(0)  # one turn of the loop
    assert "\n".join(sent).split("\n") == lines
    assert all(len(text) <= 1000 for text in sent)
    assert len(set(seen)) > 10  # a few messages at a time, with the loop free in between
    batcher.close()
