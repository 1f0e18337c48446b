"""When may the agent try again? Reset times read from rate-limit and usage-limit messages.

Agents name the moment a limit lifts in several ways; :func:`retry_at_from_text` understands:

- an epoch after a bar: ``Claude AI usage limit reached|1700000000`` (seconds or milliseconds);
- a clock time, optionally with a date and an IANA zone: ``resets 3pm``, ``resets 3:30pm
  (Europe/Paris)``, ``Your limit will reset at 9am (America/Chicago)``, ``try again at 3:45 PM``,
  ``try again at Nov 23rd, 2025 3:45 PM``, ``resets Oct 9, 5pm``, ``resets at 15:00``;
- an ISO timestamp: ``try again at 2025-11-23T15:00:00Z``;
- a delay: ``try again in 2 days 3 hours 5 minutes``, ``Please retry in 23.5s``, ``reset after
  2h30m5s``, ``retry after 30 seconds``.

A clock time without a date means its next occurrence. A time in the past or more than 31 days
ahead is not believed (None: the engine backs off instead).
"""

from __future__ import annotations

import re
import time
from datetime import date, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

_MAX_AHEAD_S = 31 * 24 * 3600

# The rate-limit wording Codex and Gemini share (each parser adds its own), case-insensitive.
RATE_LIMIT_WORDS = r"\b429\b|rate[ _-]?limit|too many requests|\bquota\b"

_EPOCH_RE = re.compile(r"\|\s*(\d{10}|\d{13})(?!\d)")

_UNIT_S = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_DURATION_PART = (
    r"(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m(?!s)|seconds?|secs?|s)(?![a-z])"
)
_DURATION_RE = re.compile(
    r"(?:try again|retry|resets?|available again|wait)\s+(?:in|after)\s+"
    r"((?:" + _DURATION_PART + r"(?:\s*,?\s*(?:and\s+)?)?)+)",
    re.IGNORECASE,
)
_DURATION_PART_RE = re.compile(_DURATION_PART, re.IGNORECASE)

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    )
}
_CLOCK_RE = re.compile(
    r"(?:resets?|try again|available again)(?:\s+at)?\s+"
    r"(?:(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+"
    r"(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(?P<year>\d{4}),?\s+)?(?:at\s+)?)?"
    r"(?P<hour>\d{1,2})(?::(?P<min>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?"
    r"(?:\s*\((?P<tz>[A-Za-z_]+(?:/[A-Za-z0-9_+\-]+)*)\))?",
    re.IGNORECASE,
)
_ISO_RE = re.compile(
    r"(?:resets?|try again|available again|retry)(?:\s+at)?\s+"
    r"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)",
    re.IGNORECASE,
)


def _believable(at: float, now: float) -> float | None:
    return at if now <= at <= now + _MAX_AHEAD_S else None


def _zone(name: str | None) -> tzinfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ValueError, OSError, KeyError):  # unknown zone, bad key, missing tz database
        return None


def _clock(m: re.Match[str], now: float) -> float | None:
    hour = int(m.group("hour"))
    minute = int(m.group("min")) if m.group("min") else 0
    ampm = (m.group("ampm") or "").lower().replace(".", "")
    if not ampm and m.group("min") is None:
        return None  # a bare number ("resets 3") is too ambiguous to believe
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    tz = _zone(m.group("tz"))
    now_dt = datetime.fromtimestamp(now, tz) if tz else datetime.fromtimestamp(now).astimezone()
    zone = now_dt.tzinfo
    if m.group("mon"):
        month = _MONTHS[m.group("mon")[:3].lower()]
        day = int(m.group("day"))
        year = int(m.group("year")) if m.group("year") else now_dt.year
        try:
            at = datetime(year, month, day, hour, minute, tzinfo=zone)
        except ValueError:
            return None
        if not m.group("year") and at.timestamp() < now - 86400:
            try:
                at = at.replace(year=year + 1)
            except ValueError:
                return None
        return _believable(at.timestamp(), now)
    today: date = now_dt.date()
    at = datetime(today.year, today.month, today.day, hour, minute, tzinfo=zone)
    if at.timestamp() <= now:
        at = datetime.combine(today + timedelta(days=1), at.timetz())
    return _believable(at.timestamp(), now)


def retry_at_from_text(text: str, now: float | None = None) -> float | None:
    """The epoch second a limit named in ``text`` lifts, or None when the text names none."""
    if not isinstance(text, str) or not text:
        return None
    text = text[:4000]
    now = time.time() if now is None else now
    try:
        m = _EPOCH_RE.search(text)
        if m:
            value = float(m.group(1))
            if len(m.group(1)) == 13:
                value /= 1000.0
            return _believable(value, now)
        m = _ISO_RE.search(text)
        if m:
            raw = m.group(1).replace("Z", "+00:00")
            at = datetime.fromisoformat(raw)
            if at.tzinfo is None:
                at = at.replace(tzinfo=timezone.utc)
            return _believable(at.timestamp(), now)
        m = _DURATION_RE.search(text)
        if m:
            seconds = 0.0
            for amount, unit in _DURATION_PART_RE.findall(m.group(1)):
                seconds += float(amount) * _UNIT_S[unit[0].lower()]
            return _believable(now + seconds, now) if seconds > 0 else None
        for m in _CLOCK_RE.finditer(text):
            at_clock = _clock(m, now)
            if at_clock is not None:
                return at_clock
    except (ValueError, OverflowError, OSError):
        return None
    return None
