"""A record's growing lists on disk (runs/ledger.py): the latest entries in memory, the older
sealed as JSON lines, and record.json still written whole from both."""

from __future__ import annotations

import io
import json
from pathlib import Path

from ralph_lsp.runs.ledger import Ledger, Ranges, write_record


def written(record: dict[str, object]) -> object:
    out = io.StringIO()
    write_record(out, record)
    return json.loads(out.getvalue())


def test_a_plain_record_is_written_as_json_writes_it() -> None:
    record = {"runId": "r-1", "n": 3, "none": None, "nested": {"a": [1, "é"]}, "empty": []}
    assert written(record) == record
    assert written({}) == {}


def test_only_the_window_stays_in_memory_and_the_record_has_every_entry(tmp_path: Path) -> None:
    ledger: Ledger[dict[str, int]] = Ledger(tmp_path / "iterations.jsonl", window=3)
    for n in range(1, 101):
        ledger.append({"n": n})
        assert len(ledger.recent) <= 3
    assert len(ledger) == 100
    assert len((tmp_path / "iterations.jsonl").read_text().splitlines()) == 97
    assert written({"iterations": ledger}) == {"iterations": [{"n": n} for n in range(1, 101)]}
    assert [e["n"] for e in ledger] == list(range(1, 101))
    assert written({"iterations": Ledger(tmp_path / "never.jsonl")}) == {"iterations": []}


def test_the_latest_entry_is_completed_in_place_before_it_is_sealed(tmp_path: Path) -> None:
    ledger: Ledger[dict[str, object]] = Ledger(tmp_path / "iterations.jsonl", window=1)
    ledger.append({"n": 1, "checkpoint": None})
    ledger.last()["checkpoint"] = "abc"  # as a checkpoint fills in its iteration
    ledger.append({"n": 2, "checkpoint": None})
    assert json.loads((tmp_path / "iterations.jsonl").read_text()) == {"n": 1, "checkpoint": "abc"}
    assert [e["checkpoint"] for e in ledger] == ["abc", None]


def test_unwritable_keeps_the_entries_in_memory(tmp_path: Path) -> None:
    ledger: Ledger[int] = Ledger(tmp_path / "missing" / "x.jsonl", window=2)
    for n in range(10):
        ledger.append(n)
    assert ledger.recent == list(range(10)) and ledger.sealed == 0
    assert written({"x": ledger}) == {"x": list(range(10))}
    in_memory: Ledger[int] = Ledger(None, window=1)  # history could not be written at all
    in_memory.append(1)
    in_memory.append(2)
    assert list(in_memory) == [1, 2]


def test_a_torn_line_past_the_sealed_entries_is_never_read(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    ledger: Ledger[int] = Ledger(path, window=1)
    for n in range(4):
        ledger.append(n)
    with open(path, "a") as f:
        f.write('{"torn": ')  # a write cut short (a full disk) after the sealed lines
    assert written({"x": ledger}) == {"x": [0, 1, 2, 3]}
    assert list(ledger) == [0, 1, 2, 3]


def test_ranges_keep_ascending_numbers_as_runs() -> None:
    dropped = Ranges()
    for n in (1, 2, 3, 5, 6, 9):
        dropped.add(n)
    assert dropped.runs == [[1, 3], [5, 6], [9, 9]]
    assert list(dropped) == [1, 2, 3, 5, 6, 9] and len(dropped) == 6
    assert written({"d": dropped, "e": Ranges()}) == {"d": [1, 2, 3, 5, 6, 9], "e": []}
