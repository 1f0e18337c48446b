"""LogBatcher under a flood: long multi-line texts keep their lines, drops count lines."""

from __future__ import annotations

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
