"""``bench/results.json``: a key a run did not measure is neither passed nor failed, and the
soak merged in by ``make bench-soak`` keeps the full run's verdicts."""

from __future__ import annotations

import json
from pathlib import Path

from bench.report import Results, merge, write


def test_a_case_not_run_is_not_a_miss_and_a_merge_keeps_the_other_verdicts(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.json"
    full = Results()
    full.put("rss_mb", 40.0, 3)
    full.put("stop_ms", {"cooperative": 20.0, "stubborn": 5000.0}, 5)
    write(full, {"date": "today"}, path)
    doc = json.loads(path.read_text())
    assert doc["pass"] == {"rss_mb": True, "stop_ms.cooperative": True, "stop_ms.stubborn": False}
    assert "soak_5000_vs_1000_rss_growth_mb" in doc["not_run"]

    soak = Results()
    soak.put("soak_5000_vs_1000_rss_growth_mb", 0.5, 1)
    merge(soak, {"date": "today"}, ["soak5000"], path)
    doc = json.loads(path.read_text())
    assert doc["pass"]["rss_mb"] is True and doc["pass"]["stop_ms.stubborn"] is False
    assert doc["pass"]["soak_5000_vs_1000_rss_growth_mb"] is True
    assert "soak_5000_vs_1000_rss_growth_mb" not in doc["not_run"]
