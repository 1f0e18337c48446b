"""The real Claude Code CLI as the reviewer (SPEC §13), offline against the scripted model: the
`claude` preset's reviewer invocation (`--permission-mode dontAsk`, reading tools and `Edit` of
the task file only) lets it append a task to the task file in its sandbox profile; the run
works that task, and the second round approves."""

from __future__ import annotations

from pathlib import Path

from .scripted_review import REVIEW_TASK
from .scripted_server import ScriptedModel
from .test_real_claude import _project, ralph_run


def test_claude_reviews_appends_a_task_then_approves(claude_bin: Path, tmp_path: Path) -> None:
    change = _project(tmp_path, 2)
    with ScriptedModel() as server:
        run = ralph_run(claude_bin, server, change, tmp_path, extra=["--review-agent", "claude"])
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.last_line.startswith("succeeded: every task is checked (3/3)"), run.stdout
    assert "; review approved" in run.last_line, run.stdout
    text = change.tasks.read_text()
    assert REVIEW_TASK.replace("[ ]", "[x]") in text and "\n## Review\n" in text
    record = run.record
    reviews = record["reviews"]
    assert [r["verdict"] for r in reviews] == ["rejected", "approved"], reviews
    assert reviews[0]["tasksAdded"] == [REVIEW_TASK] and reviews[0]["reviewer"] == "claude"
    assert all(isinstance(r["costUsd"], float) and r["costUsd"] > 0 for r in reviews)
    replies = [r.reply for r in server.message_requests()]
    assert replies.count("review-edit") == 1 and replies.count("review-approve") == 1, replies
    # the reviewer's Edit went through: no permission was asked or refused on the way
    assert "refused" not in " ".join(str(r["refusals"]) for r in reviews)
    assert len(record["iterations"]) == 3  # two tasks, then the one the review appended
