"""``ralph-lsp archive``: an OpenSpec change archived as ``openspec archive`` does (SPEC §11)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from ralph_lsp.archiving.writer import ArchiveBlocked, ArchivePlan, archive_change
from ralph_lsp.cli.common import is_terminal, root_of
from ralph_lsp.openspec.workspace import Change

#: Blockers a person at a terminal may answer "yes" to, as the CLI asks them.
_ASKABLE = {
    "archive_tasks_incomplete": "{message} Continue? (y/N) ",
    "archive_confirmation_required": "Proceed with spec updates? (y/N) ",
}


def _attempt(args: argparse.Namespace, root: Path, ask: bool) -> ArchivePlan:
    yes, tasks = bool(args.yes), Change(root, args.change).incomplete_tasks()
    while True:
        try:
            return archive_change(
                root, args.change, yes=yes, skip_specs=args.skip_specs, incomplete_tasks=tasks
            )
        except ArchiveBlocked as blocked:
            if not ask or blocked.code not in _ASKABLE:
                raise
            question = _ASKABLE[blocked.code].format(message=blocked.message)
            if input(question).strip().lower() not in ("y", "yes"):
                raise ArchiveBlocked("archive_cancelled", "Archive cancelled.") from None
            if blocked.code == "archive_tasks_incomplete":
                tasks = 0
            else:
                yes = True


def _unanswered(blocked: ArchiveBlocked, change: str) -> ArchiveBlocked:
    """The CLI's words for a question nobody could answer (stdin not a terminal)."""
    message = blocked.message.removesuffix(".").replace(": rerun with --yes", "")
    rerun = f"ralph-lsp archive {change} --yes"
    fix = f"Complete the tasks or rerun with {rerun}" if "task" in blocked.code else rerun
    return ArchiveBlocked(blocked.code, f"{message}, and no answer could be read from stdin.", fix)


def _root_json(root: Path) -> dict[str, Any]:
    return {"path": str(root), "source": "nearest"}


def cmd_archive(args: argparse.Namespace, out: TextIO) -> int:
    root = root_of(args.root)
    ask = not args.json and not args.yes and is_terminal(sys.stdin)
    try:
        try:
            plan = _attempt(args, root, ask)
        except OSError as exc:  # after the writer put everything back
            raise ArchiveBlocked("archive_error", f"{exc}. No files were changed.") from exc
    except ArchiveBlocked as blocked:
        if args.json:
            body = {"archive": None, "root": _root_json(root), "status": [blocked.diagnostic()]}
            out.write(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
        else:
            if blocked.code in _ASKABLE:  # no terminal to ask on: say so, as the CLI does
                blocked = _unanswered(blocked, args.change)
            print(f"ralph-lsp: {blocked.message}", file=sys.stderr)
            if blocked.fix:
                print(f"Fix: {blocked.fix.replace('openspec ', 'ralph-lsp ', 1)}", file=sys.stderr)
        return 1
    if args.json:
        body = {"archive": plan.result_json(), "root": _root_json(root)}
        out.write(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
        return 0
    for warning in plan.warnings:
        out.write(f"warning: {warning}\n")
    for write in plan.writes:
        verb = "created" if write.old is None else "updated"
        out.write(f"{verb} openspec/specs/{write.spec_id}/spec.md\n")
    if plan.totals is not None:
        t = plan.totals
        out.write(f"Totals: + {t.added}, ~ {t.modified}, - {t.removed}, → {t.renamed}\n")
    out.write(f"Change '{plan.change}' archived as '{plan.archive_name}'.\n")
    return 0
