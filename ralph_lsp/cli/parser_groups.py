"""The subcommands of ``ralph-lsp`` that come in groups, each with the module that runs them:
``diff`` and ``restore``, ``runs``/``attach``/``stop``/``guide`` (and ``run``'s ``--detach`` and
``--events``), ``review`` and ``merge``; ``parser.py`` adds them to the program's parser."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ralph_lsp.settings import PRESETS

AddRoot = Callable[[argparse.ArgumentParser], None]


# -- diff and restore (cli/git_commands.py) ----------------------------------------------
def add_git_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], with_root: AddRoot
) -> None:
    sp = sub.add_parser(
        "diff",
        help="git's diff of what one iteration of a run changed (needs a git work tree)",
    )
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp.add_argument("--run", metavar="ID", help="the run (default: the latest with checkpoints)")
    sp.add_argument(
        "--iteration", type=_whole, metavar="N", help="the iteration (default: the run's last)"
    )
    sp = sub.add_parser(
        "restore",
        help="put the work tree's files back as they were after an iteration (undoable)",
        description="Put the work tree's files back as they were after iteration N. The state"
        " before is recorded first as a checkpoint, named in the output, so the restore can be"
        " undone with --checkpoint (no run or retention removes an undo). Your index, HEAD,"
        " branches and stash are left alone, and ignored files are never touched. Refused while"
        " any change runs in this work tree.",
    )
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp.add_argument("--iteration", type=_whole, metavar="N", help="the iteration to go back to")
    sp.add_argument("--run", metavar="ID", help="the run (default: the latest with checkpoints)")
    sp.add_argument(
        "--checkpoint",
        metavar="REF",
        help="restore this checkpoint instead (e.g. the undo checkpoint a restore printed)",
    )


def _whole(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value}")
    return value


# -- runs, attach, stop, guide; run --detach/--events (cli/run_control.py) -------------------------
def add_run_flags(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--detach",
        action="store_true",
        help="start the run in a runner of its own and return once it runs, printing the run"
        " id (follow it with `attach`, end it with `stop`)",
    )
    sp.add_argument(
        "--events",
        action="store_true",
        help="print the run's event stream (newline-delimited JSON, docs/events.md) on stdout"
        " instead of the terminal rendering; the last event is `end`",
    )


def add_runs_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], with_root: AddRoot
) -> None:
    sp = sub.add_parser("runs", help="the live and recent runs: state, progress, pid, how long")
    with_root(sp)
    sp.add_argument("--json", action="store_true", help='print {"runs": [...]}')
    sp = sub.add_parser(
        "attach",
        help="follow CHANGE's live run as `run` shows one; Ctrl-C detaches without stopping it",
    )
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp = sub.add_parser("stop", help="stop CHANGE's live run, whoever started it")
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp = sub.add_parser("guide", help="queue guidance for the next iteration of CHANGE's live run")
    sp.add_argument("change", metavar="CHANGE")
    sp.add_argument("text", metavar="TEXT")
    with_root(sp)


# -- review and merge (cli/merging.py) ----------------------------------------------------
def add_merge_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], with_root: AddRoot
) -> None:
    sp = sub.add_parser(
        "review",
        help="a run's branch for review: files and diff from the merge-base with the target,"
        " the task → iteration → commit map, verification and cost",
    )
    sp.add_argument("change", metavar="CHANGE")
    sp.add_argument("--run", metavar="ID", help="the run (default: the newest with a branch)")
    sp.add_argument("--into", metavar="BRANCH", help="the target (default: the current branch)")
    sp.add_argument("--json", action="store_true", help="print the review bundle as JSON")
    with_root(sp)
    sp = sub.add_parser(
        "merge",
        help="merge a run's branch into a target only once the merged result passes"
        " verification (exit 0 merged, 1 parked needs-review, 3 refused, 2 usage)",
    )
    sp.add_argument("change", metavar="CHANGE", nargs="?")
    sp.add_argument("--run", metavar="ID", help="the run (default: the newest with a branch)")
    sp.add_argument("--into", metavar="BRANCH", help="the target (default: the current branch)")
    sp.add_argument(
        "--strategy",
        choices=("merge", "squash", "rebase"),
        default="merge",
        help="a merge commit (default), one squashed commit, or the run's commits replayed",
    )
    sp.add_argument(
        "--all",
        action="store_true",
        help="a merge train: the unmerged succeeded runs of the last queue in queue order (or,"
        " without one, every unmerged succeeded run, oldest first), each merged onto the"
        " previous result and verified; one that fails is parked and the train goes on",
    )
    sp.add_argument(
        "--resolve",
        action="store_true",
        help="resolve with agent: commit the conflicted merge on the run's branch and run the"
        " change there with the conflict as guidance; it ends verified or stuck like any run",
    )
    sp.add_argument("--verify", action="append", metavar="CMD", help="verification command(s)")
    sp.add_argument("--verify-timeout", type=float, metavar="S", help="per command (default 900)")
    sp.add_argument(
        "--archive",
        dest="archive_on_success",
        action="store_true",
        help="archive the change on the target in a commit after the merge commit, verified"
        " with it and moved with it (setting ralph.archiveOnSuccess)",
    )
    sp.add_argument("--agent", choices=PRESETS, help="--resolve: agent preset (default: claude)")
    sp.add_argument("--agent-command", metavar="CMD", help="--resolve: the agent's program line")
    sp.add_argument("--json", action="store_true", help="print the outcome(s) as JSON")
    with_root(sp)
