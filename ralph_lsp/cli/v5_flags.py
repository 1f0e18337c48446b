"""``run``'s flags of v5: the conformance gate (SPEC §13), the reviewer (§13 "Review"), a model
per phase and escalation (§15). Each maps onto its ``ralph.*`` setting in ``flags.py``."""

from __future__ import annotations

import argparse

from ralph_lsp.settings import CONFORMANCE_REQUIRES


def add_v5_run_flags(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--model",
        metavar="MODEL",
        help="the model the agent works on the tasks with (ralph.models.apply): the preset's"
        " --model, a custom command's {model}; default: the agent's own",
    )
    sp.add_argument("--plan-model", metavar="MODEL", help="the planning model (ralph.models.plan)")
    sp.add_argument(
        "--escalation",
        metavar="A,B,C",
        help="models cheapest first: a story without progress for --escalate-after iterations"
        " moves to the next one; the next story starts at the first again",
    )
    sp.add_argument(
        "--escalate-after",
        type=int,
        metavar="N",
        help="iterations without progress before the next model of --escalation (default 2)",
    )
    sp.add_argument(
        "--review-agent",
        metavar="AGENT",
        help="once tasks, verification and conformance pass, a fresh reviewer judges the change"
        " (read-only but for the task file) and may append tasks: a preset, 'same' (the run's"
        " agent) or a command line (default: no review)",
    )
    sp.add_argument(
        "--review-model",
        metavar="MODEL",
        help="the reviewer's model (ralph.review.model; else ralph.models.review)",
    )
    sp.add_argument(
        "--review-max-rounds",
        type=int,
        metavar="N",
        help="review rounds that may append tasks before the run ends exhausted (default 2)",
    )
    sp.add_argument(
        "--conformance",
        choices=CONFORMANCE_REQUIRES,
        help="what the change's scenarios must be to succeed: each named by a test that passed"
        " in the last verification (verified), named by a test (linked), nothing (off), or"
        " auto (the default: verified once any test of the project names a scenario)",
    )
