"""``ralph-lsp plan``'s flags (SPEC §14): its own, and those of ``run`` that apply to a planning
run (the agent, limits and budgets, the sandbox, guidance, ``--detach``/``--events``), taken
from ``run``'s parser so that each is declared once."""

from __future__ import annotations

import argparse
from collections.abc import Callable

#: ``run``'s flags a planning run takes (argparse's ``dest`` of each)
SHARED = (
    "on_end",
    "agent",
    "agent_command",
    "agent_args",
    "max_iterations",
    "max_cost",
    "max_tokens",
    "model_prices",
    "plan_model",
    "stuck_after",
    "iteration_timeout",
    "stop_grace",
    "guidance",
    "allow_tool",
    "env",
    "sandbox",
    "agent_user_config",
    "detach",
    "events",
)


def add_plan_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    with_root: Callable[[argparse.ArgumentParser], None],
    run_parser: argparse.ArgumentParser,
) -> None:
    sp = sub.add_parser(
        "plan",
        help="an agent drafts the change NAME from a description, until it passes `validate"
        " --strict` with an unchecked task and a scenario per requirement (state planned);"
        " `run NAME` then approves and implements it",
    )
    sp.add_argument("change", metavar="NAME", nargs="?", help="the change to create and plan")
    with_root(sp)
    sp.add_argument("--describe", metavar="TEXT", help="what the change is to do")
    sp.add_argument(
        "--revise",
        metavar="TEXT",
        help="plan the existing change NAME again, TEXT (e.g. answers to its open questions)"
        " as guidance; the description is its last planning run's unless --describe gives one",
    )
    sp.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        help="plan several changes: one per '## name' section of FILE, its text the description",
    )
    sp.add_argument(
        "--parallel",
        type=int,
        metavar="N",
        help="with --from, plan up to N changes at once (default 1); each writes only its folder",
    )
    for action in run_parser._actions:
        if action.dest in SHARED:
            sp._add_action(action)
