"""What a run does next: the decisions of the Ralph loop, as pure functions (no I/O, no clock).

The engine gathers what an iteration produced (tasks.md before and after, how the agent ended,
what it reported) into an :class:`IterationResult` and asks :func:`after_iteration` whether to
go on, wait (a rate limit that does not count), or end with a state and a reason. Before each
spawn, :func:`before_spawn` applies the limits and :func:`choose_model` picks the model (SPEC
§15 escalation); before the first, :func:`before_start` ends a run that has nothing to do.
Every row of the outcome table in docs/guide/runs.md ("How a run ends") is a branch here, and
``tests/engine/test_policy.py`` holds one test row per branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ralph_lsp.agents.base import AgentProblem
from ralph_lsp.runs.states import RunState

# First wait after a rate limit that names no reset time; doubled each time, capped.
DEFAULT_BACKOFF_SECONDS = 30.0
MAX_BACKOFF_SECONDS = 15 * 60.0


def iterations(n: int) -> str:
    return f"{n} iteration" if n == 1 else f"{n} iterations"


@dataclass(frozen=True)
class Limits:
    max_iterations: int
    stuck_after: int
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    # Budgets whose figure only the agent's own report can give ("cost", "tokens"): a custom
    # agentCommand may or may not print them; a counted iteration without one ends the run.
    must_report: tuple[str, ...] = ()
    # SPEC §15: models cheapest first; a story without progress for escalate_after iterations
    # moves to the next (the no-progress count starts again there, so stuck comes after it).
    escalation: tuple[str, ...] = ()
    escalate_after: int = 2


@dataclass(frozen=True)
class Counters:
    """What the loop carries from one iteration to the next."""

    counted: int = 0  # iterations that count toward maxIterations
    no_progress: int = 0  # counted iterations in a row that checked no task
    last_startup_error: str | None = None
    cost_usd: float | None = None  # the agent's reported (or estimated) cost, summed
    cost_estimated: bool = False  # some of it was estimated from tokens (loop/budget.py)
    tokens: int = 0  # what maxTokens counts, summed
    backoff: float = DEFAULT_BACKOFF_SECONDS  # the next wait for a limit with no reset time
    failing: str | None = None  # the failing verification, e.g. "make test exited 2"
    # The conformance gate (SPEC §13): its first unmet scenario as the last verification left
    # it, and the most scenarios verified so far (one more is progress).
    unmet: str | None = None
    scenarios_verified: int = 0
    # Escalation (SPEC §15): the story the model step belongs to ("story 2", "the change"; None
    # before the first spawn) and the step in Limits.escalation.
    story: str | None = None
    step: int = 0


@dataclass(frozen=True)
class IterationResult:
    """What one spawn of the agent produced."""

    completed_before: int
    completed: int
    total: int
    exit_code: int | None = 0
    start_error: str | None = None  # the agent could not be executed
    printed: bool = False  # any output at all, stdout or stderr
    activity: bool = False  # a tool call or other real work
    timed_out: bool = False
    stopped: bool = False
    problems: tuple[AgentProblem, ...] = ()
    last_error: str = ""
    cost_usd: float | None = None
    cost_estimated: bool = False  # cost_usd is an estimate from the tokens at a list price
    tokens: int | None = None  # what maxTokens counts of this spawn (None: none reported)
    # Verification after this iteration: None when it did not run, else what passed or failed
    # ("make test" / "make test exited 2"), and whether it turned a failure into a pass.
    verified: str | None = None
    verify_failed: str | None = None
    verify_fixed: bool = False
    # The conformance gate after that verification, when it is on: "3/4 scenarios verified",
    # the first unmet scenario as a sentence (None: met), and how many are verified.
    conformance: str | None = None
    unmet: str | None = None
    scenarios_verified: int | None = None

    @property
    def checked(self) -> int:
        return self.completed - self.completed_before


@dataclass(frozen=True)
class Continue:
    counters: Counters


@dataclass(frozen=True)
class Wait:
    """Wait ``seconds`` and spawn again; this spawn does not count."""

    seconds: float
    message: str  # what the agent said about the limit
    counters: Counters


@dataclass(frozen=True)
class End:
    state: RunState
    reason: str
    # A success after an iteration carries the counters the loop would go on with, for a
    # review round that appends tasks (SPEC §13; loop/review_round.py). Not compared.
    counters: Counters | None = field(default=None, compare=False)


Decision = Continue | Wait | End


def before_start(
    completed: int,
    total: int,
    verified: str | None = None,
    verify_failed: str | None = None,
    conformance: str | None = None,
    unmet: str | None = None,
) -> End | None:
    """A run with nothing to do ends before the first spawn: no tasks at all (without
    verification), or every task checked, verification passing (or not used) and the
    conformance gate met (or off)."""
    if total == 0:
        return End(RunState.SUCCEEDED, "tasks.md lists no tasks: nothing to do")
    if completed >= total and verify_failed is None and unmet is None:
        reason = f"every task is already checked ({completed}/{total})"
        return End(RunState.SUCCEEDED, reason + _passed(verified) + _conforms(conformance))
    return None


def all_blocked(open_tasks: int, blocked: Sequence[tuple[str, str]]) -> End | None:
    """Stuck at once when every open task left is blocked (SPEC §3): only a person can go on.
    ``blocked`` holds (label, reason) of the open blocked tasks, in file order."""
    if not blocked or open_tasks > len(blocked):
        return None
    label, why = blocked[0]
    more = len(blocked) - 1
    return End(
        RunState.STUCK,
        f"blocked: {label} {why or '(no reason given)'}"
        + (f" (and {more} more blocked task{'s' if more > 1 else ''})" if more else ""),
    )


def _passed(verified: str | None) -> str:
    return f"; verification passed ({verified})" if verified else ""


def _conforms(conformance: str | None) -> str:
    return f"; {conformance}" if conformance else ""


def before_spawn(counters: Counters, limits: Limits, completed: int, total: int) -> End | None:
    """The limits, checked before each spawn."""
    if counters.counted >= limits.max_iterations:
        ran = f"{iterations(counters.counted)} ran (maxIterations)"
        if completed >= total and counters.failing:
            return End(
                RunState.EXHAUSTED, f"{ran} and verification still fails ({counters.failing})"
            )
        if completed >= total and counters.unmet:
            return End(RunState.EXHAUSTED, f"{ran}; conformance not met: {counters.unmet}")
        failing = f"; verification fails ({counters.failing})" if counters.failing else ""
        return End(
            RunState.EXHAUSTED,
            f"{ran} and {total - completed} of {total} tasks remain{failing}",
        )
    cost = counters.cost_usd
    if limits.max_cost_usd is not None and cost is not None and cost >= limits.max_cost_usd:
        spent = (
            f"the estimated cost ${cost:.4f} (from tokens at list prices)"
            if counters.cost_estimated
            else f"the agent's reported cost ${cost:.4f}"
        )
        return End(
            RunState.EXHAUSTED,
            f"{spent} reached maxCostUsd ${limits.max_cost_usd:.4f};"
            f" {total - completed} tasks remain",
        )
    if limits.max_tokens is not None and counters.tokens >= limits.max_tokens:
        return End(
            RunState.EXHAUSTED,
            f"{counters.tokens:,} tokens (input + output) reached maxTokens"
            f" {limits.max_tokens:,}; {total - completed} tasks remain",
        )
    return None


@dataclass(frozen=True)
class ModelChoice:
    """The model of one spawn and why (the record's ``model`` and ``modelReason``)."""

    model: str | None
    reason: str | None


def choose_model(
    counters: Counters, limits: Limits, story: str | None, base: str | None
) -> tuple[Counters, ModelChoice]:
    """The model the next spawn runs with: without escalation, ``base`` (``ralph.models``'
    apply model, or None: the agent's default); with it, the story's step of the list, a new
    story (``story``: its id, None for the whole change) starting again at the first."""
    ladder = limits.escalation
    if not ladder:
        return counters, ModelChoice(base, "ralph.models.apply" if base else None)
    key = f"story {story}" if story is not None else "the change"
    if counters.story != key:
        counters = replace(counters, story=key, step=0, no_progress=0)
    step = min(counters.step, len(ladder) - 1)
    where = f"escalation {step + 1}/{len(ladder)}"
    if step == 0:
        return counters, ModelChoice(ladder[0], f"{where}: {key} starts at the first model")
    return counters, ModelChoice(
        ladder[step],
        f"{where}: {key} made no progress in {iterations(limits.escalate_after)}"
        f" with {ladder[step - 1]}",
    )


def failed_start(r: IterationResult) -> bool:
    """A startup error: the agent exited non-zero before printing anything or doing any work.
    One that printed and exited non-zero is judged by progress like any other iteration."""
    return (
        r.exit_code not in (0, None)
        and not r.printed
        and not r.activity
        and r.checked <= 0
        and not r.timed_out
    )


def rate_limit(r: IterationResult) -> AgentProblem | None:
    """The rate or usage limit that makes this spawn not count, if any: the one that names a
    reset time wins, otherwise the latest. A spawn that checked a task or timed out counts."""
    if r.checked > 0 or r.timed_out:
        return None
    limits = [p for p in r.problems if p.kind == "rate_limit"]
    named = next((p for p in limits if p.retry_at is not None), None)
    return named or (limits[-1] if limits else None)


def add_cost(total: float | None, cost: float | None) -> float | None:
    """The reported cost so far: None until the agent reports one. A cost below 0 (or NaN) is
    no cost: nothing an agent reports may lower the total a budget is checked against."""
    return total if cost is None or not cost >= 0 else (total or 0.0) + cost


def after_iteration(r: IterationResult, counters: Counters, limits: Limits, now: float) -> Decision:
    """Continue, wait, or end, after one spawn (``now`` is the epoch time, for reset times)."""
    end = _ending(r)
    checked = r.verified is not None or r.verify_failed is not None  # verification ran
    failing = r.verify_failed if checked else counters.failing
    counters = replace(
        counters,
        cost_usd=add_cost(counters.cost_usd, r.cost_usd),
        cost_estimated=counters.cost_estimated or (r.cost_estimated and r.cost_usd is not None),
        tokens=counters.tokens + (r.tokens or 0),
        failing=failing,
        unmet=r.unmet if checked else counters.unmet,
    )
    if end is not None:
        if end.state is RunState.SUCCEEDED:
            going_on = replace(counters, counted=counters.counted + 1, no_progress=0)
            return replace(end, counters=going_on)
        return end
    limited = rate_limit(r)
    if limited is not None:
        if limited.retry_at is not None:
            return Wait(max(1.0, limited.retry_at - now), limited.message, counters)
        backoff = min(counters.backoff * 2, MAX_BACKOFF_SECONDS)
        return Wait(counters.backoff, limited.message, replace(counters, backoff=backoff))
    return _counted(r, replace(counters, counted=counters.counted + 1), limits)


def scenario_gained(r: IterationResult, counters: Counters) -> bool:
    """Whether this iteration's verification verified more scenarios than any before it."""
    return r.scenarios_verified is not None and r.scenarios_verified > counters.scenarios_verified


def _ending(r: IterationResult) -> End | None:
    """The outcomes that end a run whatever the counters say."""
    if r.stopped:
        return End(RunState.STOPPED, "stopped by the user")
    if r.start_error is not None:
        return End(RunState.FAILED, r.start_error)
    if r.total == 0:
        return End(RunState.FAILED, "tasks.md no longer lists any task (was it emptied?)")
    if r.completed >= r.total and r.verify_failed is None and r.unmet is None:
        # tasks, verification and conformance pass; with ralph.review.agent set the run hands
        # this success to a review round first (loop/review_round.py, SPEC §13 "Review")
        reason = f"every task is checked ({r.completed}/{r.total})"
        return End(RunState.SUCCEEDED, reason + _passed(r.verified) + _conforms(r.conformance))
    auth = next((p for p in r.problems if p.kind == "auth"), None)
    if auth is not None:
        return End(RunState.FAILED, f"the agent cannot authenticate: {auth.message}")
    fatal = next((p for p in r.problems if p.kind == "fatal"), None)
    if fatal is not None and r.checked <= 0:
        return End(RunState.FAILED, f"the agent cannot work: {fatal.message}")
    return None


def _unreported(r: IterationResult, limits: Limits) -> End | None:
    """A budget set on an agent that did not report what it needs: never run unbounded."""
    if "cost" in limits.must_report and limits.max_cost_usd is not None and r.cost_usd is None:
        what, figure = "maxCostUsd", "cost"
    elif "tokens" in limits.must_report and limits.max_tokens is not None and r.tokens is None:
        what, figure = "maxTokens", "tokens"
    else:
        return None
    return End(
        RunState.FAILED,
        f"{what} cannot be enforced: the agent reported no {figure} (or an invalid one) in this"
        " iteration (a custom"
        " agentCommand must print Claude's stream-json result with its cost and usage); the run"
        " was stopped rather than left without its budget",
    )


def _counted(r: IterationResult, counters: Counters, limits: Limits) -> Decision:
    """A counted iteration: two identical startup errors fail; no progress for escalateAfter
    iterations moves to the next model of the escalation (while there is one); no progress for
    stuckAfter iterations in a row (on the last model) is stuck; a budget the agent's report
    cannot feed ends the run."""
    unreported = _unreported(r, limits)
    if unreported is not None:
        return unreported
    if failed_start(r):
        signature = r.last_error or f"exit code {r.exit_code}"
        if signature == counters.last_startup_error:
            return End(RunState.FAILED, f"the agent failed the same way twice: {signature}")
        counters = replace(counters, last_startup_error=signature)
    else:
        counters = replace(counters, last_startup_error=None)
    gained = scenario_gained(r, counters)
    if gained:
        counters = replace(counters, scenarios_verified=r.scenarios_verified or 0)
    # progress: a task, a failing check made to pass, or one more scenario verified
    if r.checked > 0 or r.verify_fixed or gained:
        return Continue(replace(counters, no_progress=0))
    no_progress = counters.no_progress + 1
    if counters.step + 1 < len(limits.escalation) and no_progress >= limits.escalate_after:
        # the next model of the list takes the story over: tried before stuck
        return Continue(replace(counters, step=counters.step + 1, no_progress=0))
    if no_progress >= limits.stuck_after:
        if counters.failing:
            return End(
                RunState.STUCK,
                f"verification fails ({counters.failing}); no progress in"
                f" {iterations(no_progress)}",
            )
        if counters.unmet and r.completed >= r.total:
            return End(
                RunState.STUCK,
                f"conformance not met: {counters.unmet}; no progress in {iterations(no_progress)}",
            )
        return End(RunState.STUCK, f"no task checked in {iterations(no_progress)}")
    return Continue(replace(counters, no_progress=no_progress))
