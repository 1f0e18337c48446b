"""`ralph-lsp validate`: OpenSpec validation without an editor, as `openspec validate` does it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ralph_lsp.cli.jsonout import dumps_indented
from ralph_lsp.openspec.validation.change_rules import validate_change
from ralph_lsp.openspec.validation.issues import Report
from ralph_lsp.openspec.validation.items import list_change_ids, list_spec_ids, nearest_matches
from ralph_lsp.openspec.validation.spec_rules import validate_spec

TYPE_CHECKING = False  # typing's constant, without importing typing (mypy reads it the same)
if TYPE_CHECKING:
    import argparse
    from typing import Any, TextIO

    from ralph_lsp.cli.validate_parser import ValidateArgs

    Args = argparse.Namespace | ValidateArgs

_MARK = {"ERROR": "✗", "WARNING": "⚠", "INFO": "ℹ"}


def find_project(start: Path) -> Path | None:
    """The nearest folder at or above `start` holding `openspec/`, as the CLI's root."""
    for folder in (start, *start.parents):
        if (folder / "openspec").is_dir():
            return folder
    return None


def _validate(root: Path, kind: str, item: str, strict: bool) -> dict[str, Any]:
    start = time.perf_counter()
    if kind == "change":
        report: Report = validate_change(
            root / "openspec" / "changes" / item, strict=strict, project_root=root
        )
    else:
        report = validate_spec(root / "openspec" / "specs" / item / "spec.md", strict=strict)
    ms = round((time.perf_counter() - start) * 1000)
    issues = [i.to_json() for i in report.issues]
    return {"id": item, "type": kind, "valid": report.valid, "issues": issues, "durationMs": ms}


def _summary(results: list[dict[str, Any]], kinds: list[str]) -> dict[str, Any]:
    def totals(rows: list[dict[str, Any]]) -> dict[str, int]:
        passed = sum(1 for r in rows if r["valid"])
        return {"items": len(rows), "passed": passed, "failed": len(rows) - passed}

    by_type = {k: totals([r for r in results if r["type"] == k]) for k in kinds}
    return {"totals": totals(results), "byType": by_type}


def _error(out: TextIO, as_json: bool, code: str, message: str, fix: str | None = None) -> int:
    if as_json:
        status: dict[str, str] = {"severity": "error", "code": code, "message": message}
        if fix:
            status["fix"] = fix
        out.write(dumps_indented({"status": [status]}) + "\n")
    else:
        print(message, file=sys.stderr)
        if fix:
            print(fix, file=sys.stderr)
    return 1


def cmd_validate(args: Args, out: TextIO) -> int:
    root = find_project(Path.cwd())
    if root is None:
        print("No OpenSpec project found: no openspec/ folder here or above.", file=sys.stderr)
        return 1
    root_json = {"path": str(root), "source": "nearest"}
    bulk = args.all or args.changes or args.specs
    if bulk:
        return _bulk(root, args, out, root_json)
    if not args.item:
        print("Nothing to validate. Try one of:", file=sys.stderr)
        for hint in ("--all", "--changes", "--specs", "<item-name>"):
            print(f"  ralph-lsp validate {hint}", file=sys.stderr)
        return 1
    changes, specs = list_change_ids(root), list_spec_ids(root)
    is_change, is_spec = args.item in changes, args.item in specs
    kind = args.type or ("change" if is_change else "spec" if is_spec else None)
    if kind is None:
        near = nearest_matches(args.item, changes + specs)
        suffix = f" Did you mean: {', '.join(near)}?" if near else ""
        return _error(out, args.json, "unknown_item", f"Unknown item '{args.item}'.{suffix}")
    if not args.type and is_change and is_spec:
        message = f"Ambiguous item '{args.item}' matches both a change and a spec."
        return _error(out, args.json, "ambiguous_item", message, "Pass --type change|spec.")
    result = _validate(root, kind, args.item, args.strict)
    if args.json:
        doc = {
            "items": [result],
            "summary": _summary([result], [kind]),
            "version": "1.0",
            "root": root_json,
        }
        out.write(dumps_indented(doc) + "\n")
    else:
        _print_one(out, result)
    return 0 if result["valid"] else 1


def _print_one(out: TextIO, result: dict[str, Any]) -> None:
    noun = "Change" if result["type"] == "change" else "Specification"
    heading = f"{noun} '{result['id']}'"
    _print_result(out, result, f"{heading} is valid", f"{heading} has issues", "")
    if not result["valid"]:
        print("Next steps:", file=sys.stderr)
        for step in _NEXT_STEPS[result["type"]]:
            print(f"  {step.replace('<id>', result['id'])}", file=sys.stderr)


def _print_result(
    out: TextIO, result: dict[str, Any], valid: str, invalid: str, indent: str
) -> None:
    """``valid`` on ``out``, else ``invalid`` on stderr, then each issue on stderr."""
    if result["valid"]:
        out.write(valid + "\n")
    else:
        print(invalid, file=sys.stderr)
    for issue in result["issues"]:
        mark = _MARK[issue["level"]]
        print(
            f"{indent}{mark} [{issue['level']}] {issue['path']}: {issue['message']}",
            file=sys.stderr,
        )


_NEXT_STEPS = {
    "change": [
        "- Ensure change has deltas in specs/: use headers"
        " ## ADDED/MODIFIED/REMOVED/RENAMED Requirements",
        "- Each requirement MUST include at least one #### Scenario: block",
        "- Debug parsed deltas: openspec show <id> --json --deltas-only",
    ],
    "spec": [
        "- Ensure spec includes ## Purpose and ## Requirements sections",
        "- Each requirement MUST include at least one #### Scenario: block",
        "- Re-run with --json to see structured report",
    ],
}


def _bulk(root: Path, args: Args, out: TextIO, root_json: dict[str, str]) -> int:
    kinds = [
        k
        for k, on in (("change", args.all or args.changes), ("spec", args.all or args.specs))
        if on
    ]
    plan = [("change", c) for c in list_change_ids(root)] if "change" in kinds else []
    plan += [("spec", s) for s in list_spec_ids(root)] if "spec" in kinds else []
    results = sorted(
        (_validate(root, k, i, args.strict) for k, i in plan),
        key=lambda r: (r["id"].lower(), r["id"]),
    )
    summary = _summary(results, kinds)
    if args.json:
        out.write(
            dumps_indented(
                {"items": results, "summary": summary, "version": "1.0", "root": root_json}
            )
            + "\n"
        )
    elif not results:
        out.write("No items found to validate.\n")
    else:
        _print_bulk(out, results, summary)
    return 1 if summary["totals"]["failed"] else 0


def _print_bulk(out: TextIO, results: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    for r in results:
        _print_result(out, r, f"✓ {r['type']}/{r['id']}", f"✗ {r['type']}/{r['id']}", "  ")
    t = summary["totals"]
    out.write(f"Totals: {t['passed']} passed, {t['failed']} failed ({t['items']} items)\n")
    first = next((r for r in results if not r["valid"]), None)
    if first:
        out.write(f"Details: ralph-lsp validate {first['id']} --type {first['type']}\n")
