"""A run's start request goes through a runner's and a Ray job's command line unchanged."""

from __future__ import annotations

import shlex
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from ralph_lsp.remote import job
from ralph_lsp.remote.remote_run import Plan, entrypoint
from ralph_lsp.runner import __main__ as runner_main
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.settings import Settings

TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=30)
REQUESTS = st.builds(
    RunRequest,
    max_iterations=st.none() | st.integers(1, 500),
    scope=st.none() | st.sampled_from(["story", "change", "task"]),
    guidance=st.lists(TEXT, max_size=3),
    story=st.none() | TEXT,
    queue=st.none() | st.fixed_dictionaries({"id": st.just("q-1"), "position": st.integers(1, 9)}),
    follow_up=st.booleans(),
)


@given(REQUESTS)
def test_a_runners_command_line_carries_the_request_whole(request: RunRequest) -> None:
    args = runner_main.parse(["--root=/r", "--change=-x", *request.argv()])
    back = RunRequest.from_args(args)
    assert back == request and back.queue == request.queue
    assert args.change == "-x"


@given(REQUESTS)
def test_a_ray_jobs_entrypoint_carries_it_but_what_stays_here(request: RunRequest) -> None:
    plan = Plan(None, "https://example.com/r.git", "r-1", "ralph/a/r-1", "abc", ".")  # type: ignore[arg-type]
    argv = shlex.split(entrypoint(plan, "a", Settings(), request))
    back = RunRequest.from_args(job.parse(argv[3:]))
    assert back == replace(request, follow_up=False) and back.queue is None
