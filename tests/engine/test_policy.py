"""The run policy, row by row: every outcome of the loop without a process."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ralph_lsp.agents.base import AgentProblem
from ralph_lsp.loop.policy import (
    MAX_BACKOFF_SECONDS,
    Continue,
    Counters,
    End,
    IterationResult,
    Limits,
    Wait,
    after_iteration,
    all_blocked,
    before_spawn,
    before_start,
    failed_start,
)
from ralph_lsp.runs.states import RunState

LIMITS = Limits(max_iterations=20, stuck_after=3, max_cost_usd=None)
NOW = 1_700_000_000.0


def it(**kw: object) -> IterationResult:
    """An iteration of a 2/5 change that checked nothing, exited 0 and printed."""
    base = {"completed_before": 2, "completed": 2, "total": 5, "printed": True}
    return IterationResult(**{**base, **kw})  # type: ignore[arg-type]


def problem(kind: str, message: str = "m", retry_at: float | None = None) -> AgentProblem:
    return AgentProblem(kind, message, retry_at)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("completed", "total", "verified", "failed", "expected"),
    [
        (0, 0, None, None, End(RunState.SUCCEEDED, "tasks.md lists no tasks: nothing to do")),
        (4, 4, None, None, End(RunState.SUCCEEDED, "every task is already checked (4/4)")),
        (
            4,
            4,
            "make test",
            None,
            End(
                RunState.SUCCEEDED,
                "every task is already checked (4/4); verification passed (make test)",
            ),
        ),
        (4, 4, None, "make test exited 2", None),  # the loop iterates to fix it
        (3, 4, None, None, None),
    ],
)
def test_before_start(
    completed: int, total: int, verified: str | None, failed: str | None, expected: End | None
) -> None:
    assert before_start(completed, total, verified, failed) == expected


@pytest.mark.parametrize(
    ("counters", "limits", "expected"),
    [
        (Counters(counted=19), LIMITS, None),
        (
            Counters(counted=20),
            LIMITS,
            End(RunState.EXHAUSTED, "20 iterations ran (maxIterations) and 3 of 5 tasks remain"),
        ),
        (
            Counters(counted=1),
            Limits(1, 3),
            End(RunState.EXHAUSTED, "1 iteration ran (maxIterations) and 3 of 5 tasks remain"),
        ),
        (Counters(cost_usd=0.99), Limits(20, 3, 1.0), None),
        (
            Counters(cost_usd=1.25),
            Limits(20, 3, 1.0),
            End(
                RunState.EXHAUSTED,
                "the agent's reported cost $1.2500 reached maxCostUsd $1.0000; 3 tasks remain",
            ),
        ),
        (
            Counters(cost_usd=0.016, cost_estimated=True),
            Limits(20, 3, 0.01),
            End(
                RunState.EXHAUSTED,
                "the estimated cost $0.0160 (from tokens at list prices) reached maxCostUsd"
                " $0.0100; 3 tasks remain",
            ),
        ),
        (Counters(tokens=9_999), Limits(20, 3, None, 10_000), None),
        (
            Counters(tokens=12_000),
            Limits(20, 3, None, 10_000),
            End(
                RunState.EXHAUSTED,
                "12,000 tokens (input + output) reached maxTokens 10,000; 3 tasks remain",
            ),
        ),
        (Counters(cost_usd=None), Limits(20, 3, 0.0), None),  # no cost reported: no limit hit
        (
            Counters(counted=20, failing="make test exited 2"),
            LIMITS,
            End(
                RunState.EXHAUSTED,
                "20 iterations ran (maxIterations) and 3 of 5 tasks remain;"
                " verification fails (make test exited 2)",
            ),
        ),
    ],
)
def test_before_spawn(counters: Counters, limits: Limits, expected: End | None) -> None:
    assert before_spawn(counters, limits, 2, 5) == expected


# (what the iteration produced, the counters before, the decision)
ROWS: list[tuple[str, IterationResult, Counters, object]] = [
    ("progress continues", it(completed=3), Counters(no_progress=2), Continue(Counters(counted=1))),
    (
        "every task checked succeeds",
        it(completed=5),
        Counters(),
        End(RunState.SUCCEEDED, "every task is checked (5/5)"),
    ),
    (
        "stopped wins over success",
        it(completed=5, stopped=True),
        Counters(),
        End(RunState.STOPPED, "stopped by the user"),
    ),
    (
        "a start error fails",
        it(start_error="agent program 'x' was not found on PATH", printed=False, exit_code=None),
        Counters(),
        End(RunState.FAILED, "agent program 'x' was not found on PATH"),
    ),
    (
        "an emptied tasks.md fails",
        it(completed=0, total=0),
        Counters(),
        End(RunState.FAILED, "tasks.md no longer lists any task (was it emptied?)"),
    ),
    (
        "an auth problem fails even after progress",
        it(completed=3, problems=(problem("auth", "Not logged in"),)),
        Counters(),
        End(RunState.FAILED, "the agent cannot authenticate: Not logged in"),
    ),
    (
        "a fatal problem with no progress fails",
        it(problems=(problem("fatal", "refused flag"),)),
        Counters(),
        End(RunState.FAILED, "the agent cannot work: refused flag"),
    ),
    (
        "a fatal problem after progress is judged by progress",
        it(completed=3, problems=(problem("fatal", "refused flag"),)),
        Counters(),
        Continue(Counters(counted=1)),
    ),
    (
        "no progress counts toward stuck",
        it(),
        Counters(counted=1, no_progress=1),
        Continue(Counters(counted=2, no_progress=2)),
    ),
    (
        "stuckAfter iterations without progress is stuck",
        it(),
        Counters(counted=2, no_progress=2),
        End(RunState.STUCK, "no task checked in 3 iterations"),
    ),
    (
        "a timed-out iteration counts as no progress",
        it(timed_out=True, exit_code=-15, printed=False),
        Counters(),
        Continue(Counters(counted=1, no_progress=1)),
    ),
    (
        "a silent non-zero exit is a startup error",
        it(exit_code=7, printed=False, last_error=""),
        Counters(),
        Continue(Counters(counted=1, no_progress=1, last_startup_error="exit code 7")),
    ),
    (
        "the same startup error twice fails",
        it(exit_code=7, printed=False),
        Counters(counted=1, no_progress=1, last_startup_error="exit code 7"),
        End(RunState.FAILED, "the agent failed the same way twice: exit code 7"),
    ),
    (
        "an agent that printed and exited 1 is judged by progress",
        it(exit_code=1, printed=True, last_error="boom"),
        Counters(counted=1, no_progress=1, last_startup_error="boom"),
        Continue(Counters(counted=2, no_progress=2)),
    ),
    (
        "a rate limit with a reset time waits until it, uncounted",
        it(problems=(problem("rate_limit", "limit", NOW + 120),)),
        Counters(counted=4, no_progress=2),
        Wait(120.0, "limit", Counters(counted=4, no_progress=2)),
    ),
    (
        "a rate limit without one backs off, doubling",
        it(problems=(problem("rate_limit", "429"),)),
        Counters(backoff=30.0),
        Wait(30.0, "429", Counters(backoff=60.0)),
    ),
    (
        "the back-off is capped",
        it(problems=(problem("rate_limit", "429"),)),
        Counters(backoff=MAX_BACKOFF_SECONDS),
        Wait(MAX_BACKOFF_SECONDS, "429", Counters(backoff=MAX_BACKOFF_SECONDS)),
    ),
    (
        "a reset time in the past waits a second",
        it(problems=(problem("rate_limit", "limit", NOW - 50),)),
        Counters(),
        Wait(1.0, "limit", Counters()),
    ),
    (
        "a rate limit after progress counts",
        it(completed=3, problems=(problem("rate_limit", "limit", NOW + 60),)),
        Counters(),
        Continue(Counters(counted=1)),
    ),
    (
        "every task checked but verification fails: no success, go on",
        it(completed=5, verify_failed="make test exited 2"),
        Counters(no_progress=1),
        Continue(Counters(counted=1, no_progress=0, failing="make test exited 2")),
    ),
    (
        "every task checked and verification passes: success naming it",
        it(completed=5, verified="make test"),
        Counters(),
        End(RunState.SUCCEEDED, "every task is checked (5/5); verification passed (make test)"),
    ),
    (
        "fixing a failing verification is progress, and success",
        it(completed=5, verified="make test", verify_fixed=True),
        Counters(no_progress=2, failing="make test exited 2"),
        End(RunState.SUCCEEDED, "every task is checked (5/5); verification passed (make test)"),
    ),
    (
        "a failing verification made to pass with tasks left is progress",
        it(verified="make test", verify_fixed=True),
        Counters(counted=3, no_progress=2, failing="make test exited 2"),
        Continue(Counters(counted=4, no_progress=0)),
    ),
    (
        "no progress while verification fails is stuck, naming the command",
        it(completed=5, completed_before=5, verify_failed="make test exited 2"),
        Counters(counted=4, no_progress=2, failing="make test exited 2"),
        End(
            RunState.STUCK,
            "verification fails (make test exited 2); no progress in 3 iterations",
        ),
    ),
    (
        "an iteration without verification keeps the failing one",
        it(completed=3),
        Counters(failing="make test exited 2"),
        Continue(Counters(counted=1, failing="make test exited 2")),
    ),
    (
        "reported cost adds up",
        it(completed=3, cost_usd=0.25),
        Counters(cost_usd=0.5),
        Continue(Counters(counted=1, cost_usd=0.75)),
    ),
    (
        "an estimated cost adds up and stays marked as an estimate; tokens add up",
        it(completed=3, cost_usd=0.25, cost_estimated=True, tokens=1100),
        Counters(cost_usd=0.5, tokens=900),
        Continue(Counters(counted=1, cost_usd=0.75, cost_estimated=True, tokens=2000)),
    ),
]


@pytest.mark.parametrize(("name", "result", "counters", "expected"), ROWS, ids=[r[0] for r in ROWS])
def test_after_iteration(
    name: str, result: IterationResult, counters: Counters, expected: object
) -> None:
    assert after_iteration(result, counters, LIMITS, NOW) == expected


def test_a_named_reset_time_wins_over_a_later_limit_without_one() -> None:
    r = it(problems=(problem("rate_limit", "a", NOW + 300), problem("rate_limit", "b")))
    assert after_iteration(r, Counters(), LIMITS, NOW) == Wait(300.0, "a", Counters())


def test_a_cost_reported_by_a_rate_limited_spawn_still_adds_up() -> None:
    r = it(problems=(problem("rate_limit", "x", NOW + 10),), cost_usd=0.1)
    decision = after_iteration(r, Counters(cost_usd=1.0), LIMITS, NOW)
    assert isinstance(decision, Wait) and decision.counters.cost_usd == pytest.approx(1.1)


def test_failed_start_needs_silence_a_nonzero_exit_and_no_work() -> None:
    silent = it(exit_code=2, printed=False)
    assert failed_start(silent)
    assert not failed_start(replace(silent, exit_code=0))
    assert not failed_start(replace(silent, printed=True))
    assert not failed_start(replace(silent, activity=True))
    assert not failed_start(replace(silent, completed=3))
    assert not failed_start(replace(silent, timed_out=True))


def test_states_read_as_their_words() -> None:
    assert f"{RunState.STUCK}: x" == "stuck: x" and str(RunState.FAILED) == "failed"
    assert RunState.SUCCEEDED == "succeeded" and not RunState.RUNNING.final


BLOCKED_ROWS = [
    ("nothing blocked", 3, [], None),
    ("one of two open tasks blocked: go on with the other", 2, [("5.2", "token")], None),
    (
        "the only open task blocked",
        1,
        [("5.2", "token")],
        End(RunState.STUCK, "blocked: 5.2 token"),
    ),
    (
        "every open task blocked: the first named, the others counted",
        3,
        [("5.2", "needs the token"), ("6.1", "b"), ("6.2", "c")],
        End(RunState.STUCK, "blocked: 5.2 needs the token (and 2 more blocked tasks)"),
    ),
    (
        "a blocked line with no reason",
        2,
        [("Deploy", ""), ("x", "y")],
        End(RunState.STUCK, "blocked: Deploy (no reason given) (and 1 more blocked task)"),
    ),
]


@pytest.mark.parametrize(
    ("name", "open_tasks", "blocked", "expected"), BLOCKED_ROWS, ids=[r[0] for r in BLOCKED_ROWS]
)
def test_all_blocked(
    name: str, open_tasks: int, blocked: list[tuple[str, str]], expected: End | None
) -> None:
    assert all_blocked(open_tasks, blocked) == expected


def test_every_task_checked_but_verification_failing_at_the_limit_is_exhausted() -> None:
    # SPEC §3: exhausted when maxIterations ran and verification still fails (tasks all done).
    end = before_spawn(Counters(counted=20, failing="make test exited 2"), LIMITS, 5, 5)
    assert end == End(
        RunState.EXHAUSTED,
        "20 iterations ran (maxIterations) and verification still fails (make test exited 2)",
    )


def test_the_engine_and_the_policy_have_no_function_of_60_lines_or_more() -> None:
    # Issue 13: the loop's decisions are out of the engine, which stays small, with no
    # "# Long:" exemption (tests/test_function_length.py allows one elsewhere).
    import ast
    from pathlib import Path

    import ralph_lsp

    package = Path(ralph_lsp.__file__).parent / "loop"
    for name in (
        "engine.py",
        "run.py",
        "reporting.py",
        "verification.py",
        "policy.py",
        "iteration.py",
    ):
        tree = ast.parse((package / name).read_text())
        longest = max(
            (n.end_lineno or n.lineno) - n.lineno + 1
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        )
        assert longest < 60, f"{name}: a function of {longest} lines"


def test_a_budget_a_custom_agent_does_not_feed_ends_the_run() -> None:
    # A custom agentCommand's budget is not refused at start (it may print Claude's result with
    # its cost), but a counted iteration that reported none ends the run: never unbounded.
    limits = Limits(20, 3, max_cost_usd=1.0, must_report=("cost",))
    ended = after_iteration(it(completed=3), Counters(), limits, NOW)
    assert isinstance(ended, End) and ended.state is RunState.FAILED
    assert ended.reason.startswith("maxCostUsd cannot be enforced: the agent reported no cost")
    reported = after_iteration(it(completed=3, cost_usd=0.1), Counters(), limits, NOW)
    assert isinstance(reported, Continue)
    tokens = Limits(20, 3, max_tokens=100, must_report=("tokens",))
    ended = after_iteration(it(completed=3, cost_usd=0.1), Counters(), tokens, NOW)
    assert isinstance(ended, End) and "maxTokens cannot be enforced" in ended.reason
    assert isinstance(after_iteration(it(completed=3, tokens=5), Counters(), tokens, NOW), Continue)


# --- the conformance gate (SPEC §13): one row per branch -------------------------------------

UNMET = "Scenario *Shout twice* has no test that names it (openspec/x/spec.md:10)"


@pytest.mark.parametrize(
    ("conformance", "unmet", "expected"),
    [
        (
            "3/3 scenarios verified",
            None,
            End(
                RunState.SUCCEEDED,
                "every task is already checked (4/4); verification passed (make test);"
                " 3/3 scenarios verified",
            ),
        ),
        ("2/3 scenarios verified", UNMET, None),  # the loop goes on for the scenario
    ],
)
def test_before_start_with_the_gate(
    conformance: str, unmet: str | None, expected: End | None
) -> None:
    assert before_start(4, 4, "make test", None, conformance, unmet) == expected


def test_all_checked_and_verified_with_the_gate_met_succeeds_saying_it() -> None:
    r = it(completed=5, verified="make test", conformance="3/3 scenarios verified")
    d = after_iteration(r, Counters(), LIMITS, NOW)
    assert d == End(
        RunState.SUCCEEDED,
        "every task is checked (5/5); verification passed (make test); 3/3 scenarios verified",
    )


def test_all_checked_and_verified_with_the_gate_unmet_goes_on() -> None:
    r = it(completed=5, completed_before=4, verified="make test", unmet=UNMET, scenarios_verified=2)
    d = after_iteration(r, Counters(), LIMITS, NOW)
    assert isinstance(d, Continue)
    assert d.counters.unmet == UNMET and d.counters.scenarios_verified == 2


def test_one_more_scenario_verified_is_progress() -> None:
    r = it(completed=5, completed_before=5, verified="make test", unmet=UNMET, scenarios_verified=2)
    d = after_iteration(r, Counters(no_progress=2, scenarios_verified=1), LIMITS, NOW)
    assert isinstance(d, Continue)
    assert d.counters.no_progress == 0 and d.counters.scenarios_verified == 2


def test_the_gate_unmet_without_progress_is_stuck_naming_the_scenario() -> None:
    r = it(completed=5, completed_before=5, verified="make test", unmet=UNMET, scenarios_verified=2)
    d = after_iteration(r, Counters(no_progress=2, scenarios_verified=2), LIMITS, NOW)
    assert d == End(RunState.STUCK, f"conformance not met: {UNMET}; no progress in 3 iterations")


def test_a_failing_verification_is_named_before_the_gate() -> None:
    r = it(completed=5, completed_before=5, verify_failed="make test exited 1", unmet=UNMET)
    d = after_iteration(r, Counters(no_progress=2), LIMITS, NOW)
    assert d == End(
        RunState.STUCK, "verification fails (make test exited 1); no progress in 3 iterations"
    )


def test_an_iteration_without_verification_keeps_the_gate_as_it_was() -> None:
    d = after_iteration(it(), Counters(unmet=UNMET), LIMITS, NOW)
    assert isinstance(d, Continue) and d.counters.unmet == UNMET


def test_exhausted_with_every_task_checked_names_the_unmet_scenario() -> None:
    d = before_spawn(Counters(counted=20, unmet=UNMET), LIMITS, 5, 5)
    assert d == End(
        RunState.EXHAUSTED, f"20 iterations ran (maxIterations); conformance not met: {UNMET}"
    )


# -- escalation (SPEC §15): the model of each spawn, one row per branch ----------------------
LADDER = Limits(20, stuck_after=3, escalation=("s", "m", "l"), escalate_after=2)


@pytest.mark.parametrize(
    ("counters", "limits", "story", "base", "expected_step", "model", "reason"),
    [
        # no escalation: the apply model (or none: the agent's default), nothing counted
        (Counters(), LIMITS, "1", None, 0, None, None),
        (Counters(), LIMITS, "1", "opus", 0, "opus", "ralph.models.apply"),
        # the first spawn of a story starts at the first model
        (Counters(), LADDER, "1", "opus", 0, "s",
         "escalation 1/3: story 1 starts at the first model"),
        # the same story keeps its step, and says why it is there
        (
            Counters(story="story 1", step=1, no_progress=1), LADDER, "1", None, 1, "m",
            "escalation 2/3: story 1 made no progress in 2 iterations with s",
        ),
        # the next story starts again at the first
        (Counters(story="story 1", step=2), LADDER, "2", None, 0, "s",
         "escalation 1/3: story 2 starts at the first model"),
        # the whole change (scope change) is one "story"
        (Counters(), LADDER, None, None, 0, "s",
         "escalation 1/3: the change starts at the first model"),
    ],
)  # fmt: skip
def test_choose_model(
    counters: Counters,
    limits: Limits,
    story: str | None,
    base: str | None,
    expected_step: int,
    model: str | None,
    reason: str | None,
) -> None:
    from ralph_lsp.loop.policy import ModelChoice, choose_model

    after, choice = choose_model(counters, limits, story, base)
    assert choice == ModelChoice(model, reason)
    assert after.step == expected_step
    if limits.escalation and counters.story != (f"story {story}" if story else "the change"):
        assert after.no_progress == 0  # a new story's count starts again


@pytest.mark.parametrize(
    ("counters", "result", "expected"),
    [
        # no progress for escalateAfter on a step that has a next: the next model, count reset
        (Counters(step=0, no_progress=1), it(), Continue(Counters(counted=1, step=1))),
        # below escalateAfter: the count grows on the same step
        (Counters(step=1), it(), Continue(Counters(counted=1, step=1, no_progress=1))),
        # progress on any step: the count resets and the step stays
        (Counters(step=1, no_progress=1), it(completed=3), Continue(Counters(counted=1, step=1))),
        # the last step: no further model, stuckAfter ends the run stuck
        (
            Counters(step=2, no_progress=2), it(),
            End(RunState.STUCK, "no task checked in 3 iterations"),
        ),
        # on the last step escalateAfter no longer applies
        (Counters(step=2, no_progress=1), it(),
         Continue(Counters(counted=1, step=2, no_progress=2))),
    ],
)  # fmt: skip
def test_escalation_is_tried_before_stuck(
    counters: Counters, result: IterationResult, expected: Continue | End
) -> None:
    assert after_iteration(result, counters, LADDER, NOW) == expected


def test_without_escalation_stuck_after_is_unchanged() -> None:
    # escalateAfter means nothing without a list: stuckAfter alone decides
    limits = replace(LIMITS, escalate_after=1)
    assert after_iteration(it(), Counters(no_progress=1), limits, NOW) == Continue(
        Counters(counted=1, no_progress=2)
    )
