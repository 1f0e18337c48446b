"""The recorded answers of `openspec validate` on the corpus and how we compare with them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ralph_lsp.openspec.validation.change_rules import validate_change
from ralph_lsp.openspec.validation.spec_rules import validate_spec
from tests.conftest import shared_path


def corpus() -> Path:
    return shared_path("corpus", "openspec-changes")


def rows() -> list[dict[str, Any]]:
    with open(corpus() / "expected" / "validate.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def run_in_process(root: Path, kind: str, item: str, strict: bool) -> dict[str, Any]:
    """Our item of the `--json` output for one row, the domain called directly."""
    if kind == "change":
        report = validate_change(root / "openspec" / "changes" / item, strict=strict)
    else:
        report = validate_spec(root / "openspec" / "specs" / item / "spec.md", strict=strict)
    issues = [i.to_json() for i in report.issues]
    return {"valid": report.valid, "issues": issues}


def differences(
    got: dict[str, Any],
    want: dict[str, Any],
    root: Path,
    *,
    exit_got: int | None = None,
    exit_want: int | None = None,
) -> list[str]:
    """What differs between our item and the CLI's, said precisely; [] when they agree."""

    def pairs(item: dict[str, Any]) -> Counter[tuple[str, str]]:
        return Counter(
            (i["level"], i["message"].replace(str(root), "{ROOT}")) for i in item["issues"]
        )

    def lines(item: dict[str, Any]) -> Counter[tuple[str, int]]:
        return Counter((i["message"][:60], i["line"]) for i in item["issues"] if "line" in i)

    out = []
    if exit_got is not None and (exit_got == 0) != (exit_want == 0):
        out.append(f"exit status {exit_got}, the CLI's {exit_want}")
    if got["valid"] != want["valid"]:
        out.append(f"valid {got['valid']}, the CLI's {want['valid']}")
    for level, message in (pairs(got) - pairs(want)).elements():
        out.append(f"extra {level}: {message[:400]}")
    for level, message in (pairs(want) - pairs(got)).elements():
        out.append(f"missing {level}: {message[:400]}")
    if lines(got) != lines(want):
        out.append(f"lines {sorted(lines(got).items())} != the CLI's {sorted(lines(want).items())}")
    return out
