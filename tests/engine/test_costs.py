"""Cost per task and spend on iterations without progress (SPEC §3 History), from records."""

from __future__ import annotations

from ralph_lsp.runs.costs import summarize, tokens_of


def test_tokens_of_every_agents_usage() -> None:
    claude = {"input_tokens": 360, "output_tokens": 40, "cache_read_input_tokens": 7,
              "cache_creation_input_tokens": 3}  # fmt: skip
    assert tokens_of(claude) == {"input": 360, "output": 40, "cacheRead": 7, "cacheWrite": 3}
    codex = {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 2}
    assert tokens_of(codex) == {"input": 10, "output": 2, "cacheRead": 4, "cacheWrite": None}
    assert tokens_of({"cached": 5, "input_tokens": True}) == {
        "input": None, "output": None, "cacheRead": 5, "cacheWrite": None
    }  # fmt: skip
    assert tokens_of(None) is None and tokens_of({"x": 1}) is None and tokens_of([1]) is None


def test_cost_per_task_and_spend_without_progress() -> None:
    its = [
        {"costUsd": 0.5, "tasksChecked": 2},
        {"costUsd": 0.25, "tasksChecked": 0},
        {"costUsd": None, "tasksChecked": 0},
        {"costUsd": 0.25, "tasksChecked": 1},
        "damaged",
    ]
    s = summarize(its)
    assert (s.total, s.tasks, s.no_progress, s.no_progress_iterations) == (1.0, 3, 0.25, 2)
    assert s.verified is None  # no verification ran: per task checked, and said so
    assert s.text() == (
        "$1.0000 · $0.3333 per task, unverified · $0.2500 on 2 iterations without progress"
    )
    assert summarize([{"costUsd": None, "tasksChecked": 1}]).text() == ""
    assert summarize([{"costUsd": 0.0, "tasksChecked": 1}]).text() == ""  # nothing spent
    nothing_done = summarize([{"costUsd": 0.1, "tasksChecked": 0}])
    assert nothing_done.per_task is None
    assert nothing_done.text() == "$0.1000 · $0.1000 on 1 iteration without progress"


def test_cost_per_verified_task_counts_tasks_up_to_the_last_passing_verification() -> None:
    ok = [{"command": "make test", "exitCode": 0}]
    bad = [{"command": "make test", "exitCode": 2}]
    its = [
        {"costUsd": 0.3, "tasksChecked": 2, "verification": ok},  # 2 verified
        {"costUsd": 0.3, "tasksChecked": 2, "verification": bad},  # 4 checked, still 2 verified
        {"costUsd": 0.3, "tasksChecked": 1},  # 5 checked, not verified after it
    ]
    s = summarize(its)
    assert (s.tasks, s.verified) == (5, 2)
    assert s.per_verified_task is not None and abs(s.per_verified_task - 0.45) < 1e-9
    assert "$0.4500 per verified task" in s.text()
    fixed = summarize([*its, {"costUsd": 0.1, "tasksChecked": 0, "verification": ok}])
    assert (fixed.verified, fixed.text().split(" · ")[1]) == (5, "$0.2000 per verified task")
    never = summarize([{"costUsd": 0.2, "tasksChecked": 3, "verification": bad}])
    assert never.verified == 0 and "no task verified" in never.text()
