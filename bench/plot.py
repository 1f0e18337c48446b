"""Plain SVG line charts of the scale figures against their size, for docs/benchmarks.md.

Hand-written SVG (a few lines of text per chart) rather than a plotting library: the charts are
a handful of points each, and the bench then needs nothing beyond the dev dependencies.
``python -m bench.plot [results.json]`` draws them again from a results file.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from bench.report import REPO, RESULTS

FOLDER = REPO / "docs" / "benchmarks"
W, H = 480, 280
LEFT, RIGHT, TOP, BOTTOM = 64, 44, 36, 44
COLOURS = ("#1f77b4", "#d62728", "#2ca02c")


@dataclass
class Chart:
    name: str  # the file's stem
    title: str
    x_label: str
    y_label: str
    series: list[tuple[str, list[tuple[float, float]]]]
    target: float | None = None  # drawn as a dashed line


def _nice_max(value: float) -> float:
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exp = float(10.0 ** math.floor(math.log10(value)))
    for step in (1, 2, 2.5, 5, 10):
        if step * exp >= value:
            return step * exp
    return 10 * exp


def _fmt(v: float) -> str:
    if v >= 1000 and v % 1000 == 0:
        return f"{v / 1000:g}k"
    return f"{v:g}"


def svg(chart: Chart) -> str:
    xs = [x for _, pts in chart.series for x, _ in pts]
    ys = [y for _, pts in chart.series for _, y in pts]
    if chart.target is not None:
        ys.append(chart.target)
    x_max = max(xs) if xs else 1.0
    y_max = _nice_max(max(ys) * 1.1 if ys else 1.0)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + pw * x / x_max

    def py(y: float) -> float:
        return TOP + ph * (1 - y / y_max)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}"'
        f' viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="13">'
        f"{escape(chart.title)}</text>",
    ]
    for i in range(5):  # horizontal grid and y ticks
        y = y_max * i / 4
        out.append(
            f'<line x1="{LEFT}" y1="{py(y):.1f}" x2="{W - RIGHT}" y2="{py(y):.1f}" stroke="#ddd"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{_fmt(round(y, 6))}</text>'
        )
    for x in sorted(set(xs)):  # x ticks at the measured sizes
        out.append(
            f'<text x="{px(x):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{_fmt(x)}</text>'
        )
    out.append(f'<path d="M{LEFT},{TOP} V{H - BOTTOM} H{W - RIGHT}" fill="none" stroke="#333"/>')
    out.append(
        f'<text x="{LEFT + pw / 2}" y="{H - 8}" text-anchor="middle">{escape(chart.x_label)}</text>'
    )
    out.append(
        f'<text transform="translate(14,{TOP + ph / 2}) rotate(-90)" text-anchor="middle">'
        f"{escape(chart.y_label)}</text>"
    )
    if chart.target is not None:
        y = py(chart.target)
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="#888"'
            ' stroke-dasharray="6 4"/>'
        )
        out.append(
            f'<text x="{W - RIGHT - 4}" y="{y - 4:.1f}" text-anchor="end" fill="#666">'
            f"target {_fmt(chart.target)}</text>"
        )
    for n, (label, pts) in enumerate(chart.series):
        colour = COLOURS[n % len(COLOURS)]
        path = " ".join(
            f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(pts)
        )
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>')
            out.append(
                f'<text x="{px(x) + 5:.1f}" y="{py(y) - 6:.1f}" fill="{colour}">{y:g}</text>'
            )
        if len(chart.series) > 1:
            y = TOP + 14 + 14 * n
            out.append(f'<text x="{LEFT + 8}" y="{y}" fill="{colour}">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _points(rows: dict[str, Any], *keys: str) -> list[tuple[float, float]]:
    pts = []
    for size, row in sorted(rows.items(), key=lambda kv: float(kv[0])):
        value: Any = row
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, (int, float)):
            pts.append((float(size), float(value)))
    return pts


def charts(doc: dict[str, Any]) -> list[Chart]:
    details = doc.get("details", {})
    targets = {k: float(v.split()[-1]) for k, v in doc.get("targets", {}).items() if "<=" in v}
    out: list[Chart] = []
    by_changes = details.get("scale", {}).get("by_changes", {})
    if by_changes:
        changes = "active changes"
        out += [
            Chart(
                "scale-changes-vs-openspec",
                "ralph-lsp changes --json ÷ openspec list --json",
                changes,
                "ratio of wall times",
                [("ratio", _points(by_changes, "list", "ratio"))],
                targets.get("scale_changes_10k_vs_openspec"),
            ),
            Chart(
                "scale-initialize-to-all-diagnostics",
                "server start → diagnostics of every tasks.md",
                changes,
                "ms",
                [("ms", _points(by_changes, "all_diagnostics_ms"))],
                targets.get("scale_initialize_to_all_diagnostics_ms"),
            ),
            Chart(
                "scale-rss",
                "server RSS once settled",
                changes,
                "MiB",
                [("RSS", _points(by_changes, "rss_mb"))],
                targets.get("scale_rss_mb_10k"),
            ),
            Chart(
                "scale-edit-to-diagnostics",
                "on-disk edit → diagnostics (p50, p95)",
                changes,
                "ms",
                [
                    ("p50", _points(by_changes, "edit_to_diagnostics", "p50")),
                    ("p95", _points(by_changes, "edit_to_diagnostics", "p95")),
                ],
                targets.get("scale_edit_to_diagnostics_p50_ms_10k"),
            ),
        ]
    by_runs = details.get("parallel", {}).get("by_runs", {})
    if by_runs:
        out += [
            Chart(
                "parallel-request-p99",
                "ralph.status latency while runs go on",
                "runs at once",
                "ms",
                [
                    ("p50", _points(by_runs, "status_p50_ms")),
                    ("p99", _points(by_runs, "status_p99_ms")),
                ],
                targets.get("parallel_8_runs_request_p99_ms"),
            ),
            Chart(
                "parallel-server-cpu",
                "server CPU per run (agents not counted)",
                "runs at once",
                "% of one core",
                [("per run", _points(by_runs, "cpu_percent_per_run"))],
                targets.get("parallel_8_runs_server_cpu_percent"),
            ),
        ]
    soak = details.get("soak", {})
    rss = soak.get("rss_mb_by_iteration")
    if rss:
        warm = soak.get("rss_mb_at_warmup")
        growth = targets.get("soak_1000_iterations_rss_growth_mb")
        out.append(
            Chart(
                "soak-rss",
                "server RSS over one long run",
                "iterations",
                "MiB",
                [("RSS", [(float(n), float(mb)) for n, mb in rss])],
                warm + growth if warm is not None and growth is not None else None,
            )
        )
    return out


def write_all(doc: dict[str, Any], folder: Path = FOLDER) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for chart in charts(doc):
        if not any(pts for _, pts in chart.series):
            continue
        path = folder / f"{chart.name}.svg"
        path.write_text(svg(chart))
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    source = Path(args[0]) if args else RESULTS
    for path in write_all(json.loads(source.read_text())):
        print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
