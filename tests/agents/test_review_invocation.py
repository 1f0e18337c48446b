"""The reviewer's invocation of each preset (SPEC §13): read-only tool permissions, its model,
and the settings that name it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ralph_lsp.agents.reviewer_invocation import READ_TOOLS, review_invocation, reviewer_of
from ralph_lsp.settings import Settings, settings_from_dict, settings_to_dict

ROOT = Path("/src/proj")
FOLDER = ROOT / "openspec" / "changes" / "c"
TASKS = FOLDER / "tasks.md"


def argv(settings: Settings, *, sandboxed: bool = False) -> list[str]:
    reviewer = reviewer_of(settings)
    assert reviewer is not None
    inv = review_invocation(
        reviewer,
        "PROMPT",
        Path("/tmp/prompt.md"),
        cwd=ROOT,
        change_folder=FOLDER,
        task_files=[TASKS],
        agent_user_config="inherit",
        env={"HOME": "/nonexistent-home", "PATH": "/usr/bin"},
        sandboxed=sandboxed,
    )
    return inv.argv


def test_claude_reviews_without_asking_with_reading_tools_and_edit_of_the_task_file() -> None:
    got = argv(Settings(review_agent="claude", review_model="claude-opus-4-1"))
    assert got[:2] == ["claude", "-p"]
    assert got[got.index("--permission-mode") + 1] == "dontAsk"
    assert "acceptEdits" not in got  # never the worker's permission mode
    allowed = got[got.index("--allowedTools") + 1 :]
    assert allowed == [*READ_TOOLS, f"Edit(/{TASKS})"]
    assert not any(t.startswith(("Write", "Bash(make", "Edit(//src/proj)")) for t in allowed)
    assert got[got.index("--model") + 1] == "claude-opus-4-1"


def test_codex_works_in_the_change_folder_and_gemini_gets_no_shell() -> None:
    codex = argv(Settings(review_agent="codex", review_model="gpt-5.5"))
    assert codex[codex.index("-C") + 1] == str(FOLDER)
    assert codex[codex.index("--model") + 1] == "gpt-5.5"
    gemini = argv(Settings(review_agent="gemini"))
    assert gemini[0] == "gemini" and "--model" not in gemini


def test_same_is_the_runs_own_agent_and_a_command_gets_its_model() -> None:
    same = reviewer_of(Settings(agent="codex", review_agent="same"))
    assert same is not None and (same.agent, same.name) == ("codex", "codex")
    command = Settings(review_agent=(sys.executable, "review.py", "--model={model}", "{prompt}"))
    got = argv(command.replace(review_model="m-1"))
    assert got == [sys.executable, "review.py", "--model=m-1", "PROMPT"]
    assert reviewer_of(Settings()) is None  # default: no review


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"review.agent": "claude"}, "claude"),
        ({"review": {"agent": "same", "maxRounds": 3}}, "same"),
        ({"review.agent": "my-reviewer --strict"}, ("my-reviewer", "--strict")),
        ({"review.agent": ["python", "r.py"]}, ("python", "r.py")),
        ({"review.agent": None}, None),
    ],
)
def test_review_agent_is_a_preset_same_or_a_command(
    raw: dict[str, object], expected: object
) -> None:
    settings, warnings = settings_from_dict(raw)
    assert warnings == [] and settings.review_agent == expected
    back, _ = settings_from_dict(settings_to_dict(settings))  # how a runner or a job gets it
    assert back == settings


def test_a_bad_review_setting_is_said_and_the_default_kept() -> None:
    settings, warnings = settings_from_dict({"review.agent": 3, "review.maxRounds": 0})
    assert settings.review_agent is None and settings.review_max_rounds == 2
    assert any("ralph.review.agent: expected a preset name" in w for w in warnings)
    assert any(
        "ralph.review.maxRounds: expected a whole number of at least 1" in w for w in warnings
    )
    untrusted, _ = settings_from_dict({"review.agent": "claude"}, trusted=False)
    assert untrusted.review_agent is None  # a workspace that is not trusted names no program


def test_a_ray_job_is_sent_the_review_settings() -> None:
    from ralph_lsp.remote.remote_run import _sent

    sent = _sent(Settings(review_agent="codex", review_model="m", review_max_rounds=3))
    assert (sent["review.agent"], sent["review.model"], sent["review.maxRounds"]) == (
        "codex",
        "m",
        3,
    )
    assert settings_from_dict(sent)[0].review_agent == "codex"  # as the job reads it back
