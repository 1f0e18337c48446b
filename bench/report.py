"""Targets, the printed table, and ``bench/results.json``."""

from __future__ import annotations

import json
import math
import operator
import os
import platform
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results.json"


@dataclass(frozen=True)
class Target:
    key: str
    sub: str | None  # e.g. "p50" for {"p50": …, "p95": …} values
    op: str  # "<=" or ">="
    limit: float
    unit: str

    @property
    def label(self) -> str:
        return f"{self.key}.{self.sub}" if self.sub else self.key


TARGETS = [
    # The machine's yardstick (bench/yardstick.py): every "ms" key is also shown in units of it.
    Target("yardstick_ms", None, "", math.nan, "ms"),
    Target("edit_to_diagnostics_ms", "p50", "<=", 5, "ms"),
    Target("edit_to_diagnostics_ms", "p95", "<=", 10, "ms"),
    Target("edit_to_refresh_ms", "p50", "<=", 5, "ms"),
    Target("edit_to_refresh_ms", "p95", "<=", 10, "ms"),
    Target("log_lines_per_s", None, ">=", 200_000, "lines/s"),
    Target("request_p99_ms_during_flood", None, "<=", 50, "ms"),
    Target("changes_1000_ms", None, "", math.nan, "ms"),
    Target("openspec_list_1000_ms", None, "", math.nan, "ms"),
    Target("changes_vs_openspec", None, "<=", 0.1, "×"),
    Target("parse_1mb_ms", None, "<=", 20, "ms"),
    Target("parse_1mb_ms_under_load", None, "<=", 20, "ms"),
    Target("startup_ms", None, "", math.nan, "ms"),
    Target("pygls_import_ms", None, "", math.nan, "ms"),
    Target("startup_vs_pygls_import", None, "<=", 1.3, "×"),
    Target("rss_mb", None, "<=", 60, "MiB"),
    Target("stop_ms", "cooperative", "<=", 200, "ms"),
    Target("stop_ms", "stubborn", "<=", 1200, "ms"),
    Target("idle_cpu_percent", None, "<=", 0.5, "%"),
    Target("scale_changes_10k_vs_openspec", None, "<=", 0.1, "×"),
    Target("scale_initialize_to_all_diagnostics_ms", None, "<=", 3000, "ms"),
    Target("scale_rss_mb_10k", None, "<=", 120, "MiB"),
    Target("scale_edit_to_diagnostics_p50_ms_10k", None, "<=", 5, "ms"),
    Target("scale_watch_limit_ok", None, "==", 1, "true"),
    Target("parallel_8_runs_request_p99_ms", None, "<=", 50, "ms"),
    Target("parallel_8_runs_server_cpu_percent", None, "<=", 2, "%"),
    Target("attach_latency_p50_ms", None, "<=", 300, "ms"),
    Target("attach_latency_over_pygls_import_ms", None, "", math.nan, "ms"),
    Target("runner_request_p99_ms_during_flood", None, "<=", 50, "ms"),
    Target("runner_idle_cpu_percent", None, "<=", 0.5, "%"),
    Target("runner_rss_mb", None, "<=", 60, "MiB"),
    Target("ray_overhead_first_iteration_s", None, "", math.nan, "s"),
    Target("ray_overhead_per_iteration_ms", None, "", math.nan, "ms"),
    Target("soak_1000_iterations_rss_growth_mb", None, "<=", 2, "MiB"),
    Target("soak_1000_iterations_ralph_dir_mb", None, "<=", 600, "MiB"),
    Target("soak_5000_iterations_rss_growth_mb", None, "", math.nan, "MiB"),
    Target("soak_5000_vs_1000_rss_growth_mb", None, "<=", 1, "MiB"),
    Target("claude_iteration_bytes_heavy_vs_clean", None, "<=", 1.05, "×"),
    # SPEC §15: the share of each request the prompt cache can reuse, and escalation's cost per
    # verified task over the same run all on the large model
    Target("prompt_prefix_stable_ratio", None, ">=", 0.9, "×"),
    Target("escalation_cost_per_verified_task_ratio", None, "<", 1, "×"),
    Target("validate_edit_to_diagnostics_ms", "p50", "<=", 10, "ms"),
    Target("validate_vs_openspec", None, "<=", 0.1, "×"),
    Target("validate_10k_requirements_ms", None, "<=", 200, "ms"),
    Target("validate_adversarial_3mb_ms", None, "<=", 1500, "ms"),
    Target("validate_crafted_edit_request_ms", "p95", "<=", 50, "ms"),
    Target("merge_check_ms", "p50", "<=", 100, "ms"),
    Target("merge_train_overhead", None, "<=", 0.10, "×"),
    Target("sandbox_spawn_overhead_ms", None, "<=", 30, "ms"),
    Target("review_round_overhead_ms", None, "<=", 100, "ms"),
    Target("sandbox_verify_ratio", None, "<=", 1.05, "×"),
    Target("proxy_stream_ratio", None, "<=", 1.10, "×"),
    Target("plan_gate_vs_openspec", None, "<=", 0.1, "×"),
    Target("plan_iteration_overhead_ms", None, "<=", 100, "ms"),
    Target("conformance_scan_vs_grep", None, "<=", 2.0, "×"),
    Target("conformance_rescan_ms", "p50", "<=", 10, "ms"),
    Target("conformance_gate_overhead", None, "<=", 1.05, "×"),
]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,  # a yes/no figure: True == 1
    "<": operator.lt,  # a ratio that must come out below 1 (escalation saves)
}


@dataclass
class Results:
    values: dict[str, Any] = field(default_factory=dict)
    reps: dict[str, int | str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def put(self, key: str, value: Any, reps: int | str) -> None:
        self.values[key] = value
        self.reps[key] = reps

    def skip(self, keys: Iterable[str], why: str) -> None:
        for key in keys:
            self.skipped[key] = why

    def value(self, target: Target) -> float | None:
        value = self.values.get(target.key)
        if isinstance(value, dict) and target.sub is not None:
            value = value.get(target.sub)
        return value if isinstance(value, (int, float)) else None

    def in_yardsticks(self, target: Target) -> float | None:
        """An absolute time in units of this run's yardstick, comparable across machines."""
        value, stick = self.value(target), self.values.get("yardstick_ms")
        if target.unit != "ms" or target.key == "yardstick_ms" or value is None:
            return None
        if not isinstance(stick, (int, float)) or not stick or math.isnan(value):
            return None
        return value / stick

    def verdict(self, target: Target) -> str:
        value = self.value(target)
        if not target.op:
            return ""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "n/a"
        return "pass" if _OPS[target.op](value, target.limit) else "FAIL"


def _fmt(value: float | None) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"


def table(results: Results) -> str:
    rows = [("metric", "value", "target", "reps", "result", "yardsticks")]
    for t in TARGETS:
        value = results.value(t)
        target = f"{t.op} {_fmt(t.limit)} {t.unit}" if t.op else f"({t.unit})"
        if t.op == "==":
            target = f"== {t.unit}"
        reps = str(results.reps.get(t.key, ""))
        verdict = results.verdict(t)
        if t.key in results.skipped and value is None:
            verdict = "skipped"
        units = results.in_yardsticks(t)
        rows.append(
            (t.label, _fmt(value), target, reps, verdict, "" if units is None else _fmt(units))
        )
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    lines = []
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                cell.rjust(widths[i]) if i in (1, 3, 5) else cell.ljust(widths[i])
                for i, cell in enumerate(row)
            ).rstrip()
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write(results: Results, environment: dict[str, Any], path: Path = RESULTS) -> None:
    _write_text(_document(results, environment), path)


def merge(
    results: Results, environment: dict[str, Any], cases: list[str], path: Path = RESULTS
) -> None:
    """Put this run's keys into the results at ``path``, keeping every key it did not measure:
    a case run alone (``make bench-soak``) joins the full run's file. The run's environment is
    kept under ``merged_runs``, beside the file's own."""
    new = _document(results, environment)
    # the file's values in yardsticks keep the yardstick of the run that measured them
    yardstick = {"yardstick_ms": new.pop("yardstick_ms", None)}
    new.get("details", {}).pop("yardstick_ms", None)
    doc: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    for key, value in new.items():
        if key in ("environment", "notes", "not_run"):
            continue
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key].update(value)
        else:
            doc[key] = value
    doc["notes"] = [*doc.get("notes", []), *new.get("notes", [])]
    if "not_run" in doc:  # what the file's own run left out and this one measured
        left = [k for k in doc["not_run"] if k not in new.get("pass", {})]
        doc["not_run"] = left
        if not left:
            del doc["not_run"]
    doc.setdefault("merged_runs", []).append({"cases": cases, **yardstick, **environment})
    doc.setdefault("environment", environment)
    _write_text(doc, path)


def _document(results: Results, environment: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for t in TARGETS:
        if t.key in results.values:
            doc[t.key] = results.values[t.key]
    doc["repetitions"] = {k: results.reps[k] for k in doc if k in results.reps}
    units = {t.label: results.in_yardsticks(t) for t in TARGETS}
    doc["in_yardsticks"] = {k: round(v, 4) for k, v in units.items() if v is not None}
    doc["targets"] = {t.label: _target_text(t) for t in TARGETS if t.op}
    # a key this run did not measure (a case not run, as the soak of `make bench-soak` is not in
    # `make bench`) is neither passed nor failed: it is left out, and a merge keeps its verdict
    measured = [
        t for t in TARGETS if t.op and (t.key in results.values or t.key in results.skipped)
    ]
    doc["pass"] = {t.label: results.verdict(t) == "pass" for t in measured}
    not_run = [t.label for t in TARGETS if t.op and t not in measured]
    if not_run:
        doc["not_run"] = not_run
    if results.skipped:
        doc["skipped"] = results.skipped
    doc["details"] = results.details
    if results.notes:
        doc["notes"] = results.notes
    doc["environment"] = environment
    return doc


def _write_text(doc: dict[str, Any], path: Path) -> None:
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    # nothing committed names a path of this machine
    for local, shown in ((str(REPO), "<repo>"), (tempfile.gettempdir(), "<tmp>")):
        text = text.replace(json.dumps(local)[1:-1], shown)
    path.write_text(text)


def _target_text(t: Target) -> str:
    return f"== {t.unit}" if t.op == "==" else f"{t.op} {t.limit:g}"


def environment() -> dict[str, Any]:
    import pygls

    return {
        "date": time.strftime("%Y-%m-%d"),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "pygls": getattr(pygls, "__version__", None) or _dist_version("pygls"),
        "watchfiles": _dist_version("watchfiles"),
        "load_average_1min_at_start": round(os.getloadavg()[0], 2),
    }


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None
