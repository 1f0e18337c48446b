"""``ralph-lsp changes``, ``prompt`` and ``history``: what the project and its record hold."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from ralph_lsp.cli.common import CliError, change_of, root_of
from ralph_lsp.cli.flags import settings_from_args
from ralph_lsp.cli.jsonout import dumps_indented
from ralph_lsp.cli.terminal import bar
from ralph_lsp.openspec.tasks import read_tasks_text
from ralph_lsp.openspec.tasks_fast import summarize_tasks
from ralph_lsp.openspec.workspace import (
    Change,
    UnknownChangeError,
    change_json,
    list_changes,
)


def cmd_changes(args: argparse.Namespace, out: TextIO) -> int:
    root = root_of(args.root)
    items = []
    for name in list_changes(root):
        change = Change(root, name)
        try:
            text = read_tasks_text(change.tasks_path)
        except OSError as exc:
            print(f"warning: {change.tasks_path}: {exc.strerror or exc}", file=sys.stderr)
            text = None
        # Counts and stories only: several times faster than a full parse_tasks per change.
        items.append((change, summarize_tasks(text or "")))
    if args.json:
        out.write(dumps_indented({"changes": [change_json(c, d, None) for c, d in items]}))
        out.write("\n")
        return 0
    if not items:
        print(f"no active changes in {root / 'openspec' / 'changes'}", file=out)
        return 0
    width = max(len(c.name) for c, _ in items)
    print(f"{'CHANGE':<{width}}  {'PROGRESS':<22}  TASKS", file=out)
    for c, d in items:
        tasks = "no tasks" if d.total == 0 else f"{d.completed}/{d.total}"
        if d.total and d.completed == d.total:
            tasks += "  ✓ complete"
        print(f"{c.name:<{width}}  {bar(d.completed, d.total)}  {tasks}", file=out)
    return 0


def cmd_prompt(args: argparse.Namespace, out: TextIO) -> int:
    from ralph_lsp.loop import verify
    from ralph_lsp.loop.prompt import build_prompt

    root = root_of(args.root)
    change = change_of(root, args.change)
    settings = settings_from_args(args)
    doc = change.read_doc()
    try:
        commands = verify.commands(settings.verify_commands, root)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    # Where the commands came from, beside the prompt (stdout stays the prompt, byte for byte).
    for c in commands:
        print(f"verification: {c.line} ({c.source})", file=sys.stderr)
    if not commands:
        print("verification: none set or defined by the project", file=sys.stderr)
    out.write(
        build_prompt(
            change,
            doc,
            scope=settings.iteration_scope,
            verify_commands=[c.line for c in commands],
            guidance=args.guidance or [],
            start_story=args.story,
        )
    )
    return 0


def cmd_history(args: argparse.Namespace, out: TextIO) -> int:
    from ralph_lsp.runs.history import load_records, with_file_uris
    from ralph_lsp.runs.record_schema import damaged_note

    root = root_of(args.root)
    if args.change is None:
        return _queue_history(root, args.json, out)
    known = list_changes(root)
    damaged: list[str] = []
    records = [with_file_uris(root, r) for r in load_records(root, args.change, damaged)]
    note = damaged_note(damaged)
    if note:
        print(f"ralph-lsp: {note}", file=sys.stderr)
    if args.change not in known and not records:
        raise CliError(str(UnknownChangeError(args.change, known)))
    receipts = bool(getattr(args, "receipts", False))
    if args.json:
        json.dump({"runs": _receipts_json(records) if receipts else records}, out, indent=2)
        out.write("\n")
        return 0
    if not records:
        print(f"no runs of {args.change} yet", file=out)
    elif receipts:
        _print_receipts(records, out)
    else:
        _print_runs(records, out)
    return 0


def _print_runs(records: list[dict[str, Any]], out: TextIO) -> None:
    from ralph_lsp.runs.costs import record_summary

    for r in records:
        its = r.get("iterations") or []
        spent = record_summary(r).text()
        print(
            f"{r['runId']}  {r.get('state') or '?':<9}  {r.get('startedAt')} → "
            f"{r.get('endedAt') or '(running)'}  {len(its)} iteration(s)"
            + (f"  {spent}" if spent else ""),
            file=out,
        )
        print(f"    {r.get('reason')}", file=out)


def _receipts_json(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``history CHANGE --receipts --json`` (SPEC §15): each run's receipts and totals."""
    from ralph_lsp.runs.receipts import receipts_json

    return [receipts_json(r) for r in records]


def _print_receipts(records: list[dict[str, Any]], out: TextIO) -> None:
    """``history CHANGE --receipts`` (SPEC §15): each run's receipts and totals."""
    from ralph_lsp.runs.receipts import receipts_text

    for r in records:
        print(f"{r['runId']}  {r.get('state') or '?'}", file=out)
        its = [it for it in r.get("iterations") or [] if isinstance(it, dict)]
        reviews = [x for x in r.get("reviews") or [] if isinstance(x, dict)]
        for line in receipts_text(its, reviews):
            print(f"    {line}", file=out)


def _queue_history(root: Path, as_json: bool, out: TextIO) -> int:
    """``ralph-lsp history`` without a change: the recent queues (SPEC §9), newest first."""
    from ralph_lsp.loop.queue import load_queues

    queues = load_queues(root)
    if as_json:
        json.dump({"queues": queues}, out, indent=2)
        out.write("\n")
        return 0
    if not queues:
        print("no queues yet (ralph-lsp history CHANGE shows a change's runs)", file=out)
        return 0
    for q in queues:
        print(
            f"{q.get('queueId')}  {q.get('state') or '?':<7}  {q.get('startedAt')} → "
            f"{q.get('endedAt') or '(running)'}  {q.get('reason') or ''}",
            file=out,
        )
        for item in q.get("items") or []:
            if isinstance(item, dict):
                run = f"  {item.get('runId')}" if item.get("runId") else ""
                print(f"    {item.get('change')}: {item.get('state')}{run}", file=out)
    return 0
