"""``ralph-lsp review`` and ``ralph-lsp merge`` (SPEC §12).

Exit codes of ``merge``: 0 merged (a train: every run merged, or nothing to merge), 1 parked
``needs-review`` (a conflict or a failed verification: the target did not move), 3 refused (the
target moved twice, local changes in its work tree, …: nothing changed), 2 a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ralph_lsp.cli.common import CliError, root_of
from ralph_lsp.cli.flags import settings_from_args
from ralph_lsp.cli.jsonout import dumps_indented
from ralph_lsp.cli.train import run_train, sayer, stop_on_signals, train_exit, train_summary
from ralph_lsp.settings import Settings

if TYPE_CHECKING:
    from ralph_lsp.merging.merge import Outcome

MERGE_EXIT = {"merged": 0, "needs-review": 1, "refused": 3}


def cmd_merge(args: argparse.Namespace, out: TextIO) -> int:
    import asyncio

    root = root_of(args.root)
    settings = settings_from_args(args)
    if args.all == bool(args.change):
        raise CliError("merge: name a CHANGE, or pass --all for the merge train")
    if args.all and (args.run or args.resolve):
        raise CliError("merge --all merges the queue's runs: --run and --resolve name one run")
    say = sayer(sys.stderr if args.json else out)
    if args.resolve:
        from ralph_lsp.cli.merge_resolve import resolve

        return resolve(root, args, settings, out)
    if args.all:
        train = asyncio.run(run_train(root, settings, args.into, args.strategy, say))
        if args.json:
            out.write(dumps_indented(train.to_json()) + "\n")
        else:
            print(train_summary(train), file=out)
        return train_exit(train)
    outcome = asyncio.run(_one(root, args, settings, say))
    if args.json:
        out.write(dumps_indented(outcome.to_json()) + "\n")
    else:
        print(_outcome_text(outcome), file=out)
    return MERGE_EXIT.get(outcome.state, 3)


async def _one(root: Path, args: argparse.Namespace, settings: Settings, say: Any) -> Outcome:
    from ralph_lsp.git.merge import MergeError
    from ralph_lsp.merging.merge import MergeRequest, merge_run

    req = MergeRequest(root, args.change, args.run, args.into, args.strategy)
    with stop_on_signals() as stop:
        try:
            return await merge_run(req, settings, say, stop)
        except MergeError as exc:
            raise CliError(str(exc)) from None


def _outcome_text(o: Outcome) -> str:
    lines = [f"{o.change}: {o.state}: {o.reason}"]
    if o.conflicts:
        lines.append("conflicting files: " + ", ".join(o.conflicts))
    if o.state == "needs-review":
        lines.append(f"review it with `ralph-lsp review {o.change} --run {o.run_id}`")
        if o.conflicts:
            lines.append(f"or let the agent resolve it: `ralph-lsp merge {o.change} --resolve`")
    return "\n".join(lines)


def cmd_review(args: argparse.Namespace, out: TextIO) -> int:
    from ralph_lsp.git.merge import MergeError
    from ralph_lsp.merging.review_bundle import bundle_text, review_bundle

    root = root_of(args.root)
    try:
        bundle = review_bundle(root, args.change, args.run, args.into)
    except MergeError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        out.write(dumps_indented(bundle) + "\n")
    else:
        out.write(bundle_text(bundle))
    return 0
