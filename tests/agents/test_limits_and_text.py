"""Reset-time parsing and the shared text helpers."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from ralph_lsp.agents.base import MAX_LINE_CHARS, LogLine, clean_text, first_line, log_lines
from ralph_lsp.agents.limits import retry_at_from_text

# 2026-03-10 12:00:00 UTC (13:00 in Paris)
NOW = datetime(2026, 3, 10, 12, 0, tzinfo=timezone.utc).timestamp()


def at(year: int, month: int, day: int, hour: int, minute: int = 0, tz: str = "UTC") -> float:
    return datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(tz)).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Claude AI usage limit reached|1773151200", 1773151200.0),
        ("Claude AI usage limit reached|1773151200000", 1773151200.0),
        ("Claude AI usage limit reached|1000000000", None),  # in the past
        (
            "You've hit your limit · resets 3pm (Europe/Paris)",
            at(2026, 3, 10, 15, tz="Europe/Paris"),
        ),
        (
            "Limit reached · resets 11:30am (Europe/Paris)",
            at(2026, 3, 11, 11, 30, tz="Europe/Paris"),
        ),
        (
            "Claude usage limit reached. Your limit will reset at 9am (America/Chicago).",
            at(2026, 3, 10, 9, tz="America/Chicago"),  # it is 07:00 there now
        ),
        ("5-hour limit reached ∙ resets 3pm (UTC)", at(2026, 3, 10, 15)),
        ("resets Mar 12, 5pm (UTC)", at(2026, 3, 12, 17)),
        ("try again at Mar 12th, 2026 3:45 PM (UTC)", at(2026, 3, 12, 15, 45)),
        ("try again at 2026-03-10T18:00:00Z", at(2026, 3, 10, 18)),
        (
            "Upgrade to Pro or try again in 2 days 3 hours 5 minutes.",
            NOW + 2 * 86400 + 3 * 3600 + 300,
        ),
        ("Please retry in 23.5s.", NOW + 23.5),
        ("Your quota will reset after 2h30m5s.", NOW + 9005),
        ("retry after 30 seconds", NOW + 30),
        ("resets 3 (Europe/Paris)", None),  # a bare number is too ambiguous
        ("resets 3pm (Mars/Olympus)", None),  # unknown zone: local time is used, still a time
        ("try again in a moment", None),
        ("no time at all", None),
        ("resets 25:00", None),
        ("try again in 400 days", None),  # too far ahead to believe
    ],
)
def test_retry_at(text: str, expected: float | None) -> None:
    got = retry_at_from_text(text, now=NOW)
    if text == "resets 3pm (Mars/Olympus)":
        assert got is not None and NOW < got <= NOW + 86400
        return
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_retry_at_default_now_is_in_the_future() -> None:
    got = retry_at_from_text("resets 3pm")
    assert got is not None
    assert (
        datetime.now(timezone.utc).timestamp()
        < got
        <= (datetime.now(timezone.utc) + timedelta(days=1)).timestamp()
    )


def test_clean_text_strips_escapes_and_controls() -> None:
    assert clean_text("\x1b[1;31mred\x1b[0m plain") == "red plain"
    assert clean_text("\x1b]0;title\x07after") == "after"
    assert clean_text("a\x00b\x07c\x7fd\x9b0me\x85") == "abcde"
    assert clean_text("tab\tkept") == "tab\tkept"
    assert clean_text("progress 10%\rprogress 90%\r") == "progress 90%"
    assert clean_text("bidi \u202eevil\u202c done") == "bidi evil done"
    assert clean_text("\ufeffbom") == "bom"
    assert clean_text("lone \ud800 surrogate") == "lone  surrogate"
    assert clean_text("bad bytes \ufffd stay visible") == "bad bytes \ufffd stay visible"


def test_clean_text_caps_huge_lines() -> None:
    huge = "x" * 5_000_000
    out = clean_text(huge)
    assert len(out) < MAX_LINE_CHARS + 60
    assert out.endswith("[cut: 5000000 characters in all]")
    assert clean_text("y" * MAX_LINE_CHARS) == "y" * MAX_LINE_CHARS


def test_log_lines_and_first_line() -> None:
    assert log_lines("a\r\nb\n\n  \nc\u2028d", "text") == [
        LogLine("a", "text"),
        LogLine("b", "text"),
        LogLine("c", "text"),
        LogLine("d", "text"),
    ]
    many = log_lines("\n".join(str(i) for i in range(1000)), "text")
    assert len(many) == 201 and many[-1] == LogLine("… (more lines cut)", "text")
    assert first_line("\n\nfirst\nsecond") == "first …"
    assert first_line("only") == "only"
    assert first_line("") == ""
