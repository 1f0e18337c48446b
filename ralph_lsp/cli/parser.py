"""Every subcommand and flag of ``ralph-lsp``, declared once, read top to bottom like ``--help``."""

from __future__ import annotations

import argparse

from ralph_lsp import __version__
from ralph_lsp.cli.parser_groups import (
    add_git_parsers,
    add_merge_parsers,
    add_run_flags,
    add_runs_parsers,
)
from ralph_lsp.cli.plan_parser import add_plan_parser
from ralph_lsp.cli.v5_flags import add_v5_run_flags
from ralph_lsp.cli.validate_parser import add_validate_parser
from ralph_lsp.settings import (
    ISOLATIONS,
    PRESETS,
    RUNNERS,
    SANDBOXES,
    SCOPES,
    USER_CONFIGS,
    VERIFY_WHEN,
)


# Long: a declarative table of every subcommand and flag, read top to bottom like --help.
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ralph-lsp",
        description=(
            "Run a Ralph loop over an OpenSpec change: spawn a coding agent again and again,"
            " each time fresh, until every task in the change's tasks.md is checked."
            " With no command (or `serve`), speak the Language Server Protocol on stdio."
        ),
        epilog=(
            "exit codes of `run` and `plan`: 0 succeeded, 1 failed, 3 stuck, 4 exhausted,"
            " 5 stopped, 6 interrupted, 7 planned (a planning run's change passed the gate and"
            " waits for approval); 2 for a usage error in any command"
        ),
    )
    p.add_argument("--version", action="version", version=f"ralph-lsp {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("serve", help="serve LSP on stdio (the default)")

    def with_root(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--root",
            metavar="DIR",
            help="a folder in the OpenSpec project (default: the current folder; its"
            " ancestors are searched for openspec/changes/)",
        )

    sp = sub.add_parser("changes", help="list the active changes with their task progress")
    with_root(sp)
    sp.add_argument("--json", action="store_true", help="print the ralph.changes object")

    sp = sub.add_parser(
        "run",
        help="run the loop over CHANGE until its tasks are checked; several changes (or --all)"
        " run as a queue",
    )
    sp.add_argument(
        "change",
        metavar="CHANGE",
        nargs="*",
        help="the change to run; several run one after another (a queue)",
    )
    with_root(sp)
    sp.add_argument(
        "--all",
        action="store_true",
        help="queue every active change with an unchecked task, in name order",
    )
    sp.add_argument(
        "--parallel",
        type=int,
        metavar="N",
        help="a queue runs up to N changes at once, each in a git worktree of its own on"
        " branch ralph/CHANGE (needs git; default 1: one after another in your work tree)",
    )
    sp.add_argument(
        "--stop-on-failure",
        action="store_true",
        help="a queue stops (dropping the changes not started) when a change does not succeed;"
        " by default it goes on with the next",
    )
    sp.add_argument(
        "--merge",
        action="store_true",
        help="when a --parallel queue ends, merge its succeeded runs into the current branch"
        " as `merge --all` does (each verified on the merged result first)",
    )
    sp.add_argument(
        "--on-end",
        metavar="CMD",
        help="a command run when the run (and a queue) ends, its end event as JSON on stdin;"
        " split like a shell line but never run by one, stopped after 30 s; its failure"
        " changes nothing (ralph.onRunEnd)",
    )
    sp.add_argument("--agent", choices=PRESETS, help="agent preset (default: claude)")
    sp.add_argument(
        "--agent-command",
        metavar="CMD",
        help="the agent's command line, split like a shell would but never run by one;"
        " may hold {prompt} or {promptFile} (without either the prompt goes to stdin)",
    )
    sp.add_argument(
        "--agent-args",
        metavar="ARGS",
        help="extra arguments appended after the claude, codex and gemini presets' own, split"
        " like a shell would (default: '--permission-mode acceptEdits', for claude only)",
    )
    sp.add_argument("--max-iterations", type=int, metavar="N", help="default 20")
    sp.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="stop when the cost reaches this: as the agent reports it (claude), else estimated"
        " from its tokens at the model's list price (codex, gemini); refused at start for a model"
        " without a price, and a custom agent command's iteration that reports no cost ends the"
        " run. With several changes, the whole queue's budget: a change does not start once it"
        " is spent",
    )
    sp.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="stop when input + output tokens (cached input included), summed over iterations,"
        " reach N",
    )
    sp.add_argument(
        "--model-prices",
        metavar="JSON",
        help='prices for estimating cost, USD per million tokens: \'{"MODEL": {"input": N,'
        ' "output": N, "cachedInput": N, "cacheWrite": N}}\' (added to the built-in list prices,'
        " ralph.prices)",
    )
    add_v5_run_flags(sp)
    sp.add_argument(
        "--stuck-after", type=int, metavar="N", help="iterations without progress (default 3)"
    )
    sp.add_argument("--scope", choices=SCOPES, help="iteration scope (default story)")
    sp.add_argument(
        "--iteration-timeout", type=float, metavar="S", help="end an iteration after S seconds"
    )
    sp.add_argument(
        "--stop-grace",
        type=float,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL on stop (default 5)",
    )
    sp.add_argument(
        "--verify-when",
        choices=VERIFY_WHEN,
        help="when verification runs: once every task is checked (final, the default), also"
        " after every iteration that checked a task (each), or never (off)",
    )
    sp.add_argument(
        "--verify-timeout",
        type=float,
        metavar="S",
        help="stop a verification command after S seconds (default 900; 0: no limit)",
    )
    sp.add_argument(
        "--finish-grace",
        type=float,
        metavar="S",
        help="once every task is checked, seconds the agent gets to exit by itself before it"
        " is stopped (default 60)",
    )
    sp.add_argument(
        "--guidance",
        action="append",
        metavar="TEXT",
        help="a directive for the first iteration's prompt (repeatable)",
    )
    sp.add_argument(
        "--story",
        metavar="ID",
        help="start with this story (its id, e.g. 2; as `changes` and the lenses number them)"
        " and go on from there as usual; blocked tasks are never worked on",
    )
    sp.add_argument(
        "--verify",
        action="append",
        metavar="CMD",
        help="a verification command: the run succeeds only once it passes, and the agent is"
        " told to run it (repeatable; default: inferred from the project)",
    )
    sp.add_argument(
        "--allow-tool",
        action="append",
        metavar="RULE",
        help="a Claude permission rule the agent may use without asking, beside the"
        " verification commands it may always run, e.g. 'Bash(npm run build:*)' (repeatable;"
        " ralph.allowedTools)",
    )
    sp.add_argument(
        "--env",
        action="append",
        metavar="NAME=VALUE",
        help="extra environment for the agent (repeatable)",
    )
    sp.add_argument(
        "--isolation",
        choices=ISOLATIONS,
        help="'worktree': work in a git worktree of its own on branch ralph/CHANGE (a commit"
        " per iteration that changed files), leaving your work tree alone (default none)",
    )
    sp.add_argument(
        "--runner",
        choices=RUNNERS,
        help="'ray': each change runs as a job on a Ray cluster (pip install 'ralph-lsp[ray]'),"
        " its work pushed to branch ralph/CHANGE/RUNID of --git-remote (default local)",
    )
    sp.add_argument(
        "--sandbox",
        choices=SANDBOXES,
        help="'auto' (default): every process of the run in an OS sandbox (bubblewrap on"
        " Linux), which writes only the work tree and reads no secrets; the run does not start"
        " when the sandbox cannot. 'off': no sandbox, said in the run's first lines",
    )
    sp.add_argument(
        "--ray-address",
        metavar="URL",
        help="the Ray Jobs API address, e.g. http://127.0.0.1:8265 (default: RAY_ADDRESS)",
    )
    sp.add_argument(
        "--git-remote",
        metavar="URL",
        help="the remote a Ray job clones from and pushes to (default: the repository's origin)",
    )
    sp.add_argument(
        "--agent-user-config",
        choices=USER_CONFIGS,
        help="'isolate' (default): the agent runs without your own global config (for claude:"
        " ~/.claude settings, CLAUDE.md, plugins, hooks, MCP servers, auto memory), keeping"
        " your login and the project's own config; 'inherit': it loads all of it",
    )
    sp.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="do not record a git checkpoint of the work tree before and after each iteration",
    )
    sp.add_argument(
        "--archive-on-success",
        action="store_true",
        help="once the run succeeds, archive the change as `ralph-lsp archive --yes` does"
        " (setting ralph.archiveOnSuccess)",
    )
    add_run_flags(sp)
    add_plan_parser(sub, with_root, sp)  # `plan` takes run's flags that apply to planning

    sp = sub.add_parser(
        "conformance",
        help="CHANGE's scenarios, the tests that name them and whether they passed in the last"
        " run's verification; exit 0 only when every scenario is verified",
    )
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp.add_argument("--json", action="store_true", help="print the table as JSON")

    sp = sub.add_parser("prompt", help="print the prompt the next iteration would get")
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp.add_argument("--scope", choices=SCOPES)
    sp.add_argument("--guidance", action="append", metavar="TEXT")
    sp.add_argument("--verify", action="append", metavar="CMD")
    sp.add_argument("--story", metavar="ID", help="the story a run started with --story works on")

    sp = sub.add_parser(
        "verify", help="run CHANGE's verification commands as a run would; exit 0 when they pass"
    )
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp.add_argument("--verify", action="append", metavar="CMD", help="a command (repeatable)")
    sp.add_argument(
        "--verify-timeout", type=float, metavar="S", help="default 900; 0 means no limit"
    )
    sp.add_argument(
        "--env", action="append", metavar="NAME=VALUE", help="extra environment (repeatable)"
    )
    sp.add_argument(
        "--sandbox",
        choices=SANDBOXES,
        help="'auto' (default): the commands run in the sandbox a run's checks get (no network"
        " but their own loopback, writes only in the project); 'off': with your full authority",
    )

    sp = sub.add_parser(
        "archive",
        help="apply CHANGE's delta specs to openspec/specs/ and move it to changes/archive/,"
        " as `openspec archive` does (all or nothing)",
        description="Apply CHANGE's delta specs to openspec/specs/ (RENAMED, REMOVED, MODIFIED,"
        " ADDED), validate the rebuilt specs, write them all or none, and move the change to"
        " openspec/changes/archive/YYYY-MM-DD-CHANGE: the files `openspec archive --yes` writes."
        " Without --yes, incomplete tasks and spec updates are asked about on a terminal and"
        " refused otherwise. Exit 0 when archived, 1 when refused.",
    )
    sp.add_argument("change", metavar="CHANGE")
    with_root(sp)
    sp.add_argument(
        "--yes", "-y", action="store_true", help="archive without asking (incomplete tasks too)"
    )
    sp.add_argument(
        "--json", action="store_true", help="print the result as `openspec archive --json`"
    )
    sp.add_argument(
        "--skip-specs", action="store_true", help="move the change without touching openspec/specs/"
    )

    sp = sub.add_parser(
        "history", help="the operator's record of CHANGE's runs; without CHANGE, the queues'"
    )
    sp.add_argument(
        "change",
        metavar="CHANGE",
        nargs="?",
        help="the change whose runs to show; left out: the recent queues and their changes",
    )
    with_root(sp)
    sp.add_argument("--json", action="store_true", help="print the ralph.history object")
    sp.add_argument(
        "--receipts",
        action="store_true",
        help="one line per iteration: model, tokens (cached apart), cost and its source, tasks,"
        " verification, why it ended; then the run's total and cost per verified task",
    )
    add_git_parsers(sub, with_root)
    add_runs_parsers(sub, with_root)
    add_validate_parser(sub)
    add_merge_parsers(sub, with_root)
    return p
