"""No secret travels in a Ray job's entrypoint (SPEC §9; issue: "secrets in a Ray job's
entrypoint"): a remote ``https://user:token@host/…`` was kept in the job's command line, the
local record and the log, and the check looked only at ``ralph.env``'s key names. Checked at the
job plan (``remote/remote_run.py``, ``remote/secrets.py``) and through ``RayRuns.start`` with a
stand-in for Ray's job client, real git underneath (``url.<bare>.insteadOf`` maps the URL with
its credentials onto a local bare repository)."""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ralph_lsp.loop.engine import LogEvent
from ralph_lsp.remote import job
from ralph_lsp.remote.ray_runs import RayRuns
from ralph_lsp.remote.remote_run import Plan, check_env, entrypoint
from ralph_lsp.remote.secrets import public_url, secret_kind
from ralph_lsp.runs.request import RunRequest
from ralph_lsp.runs.status import EngineError
from ralph_lsp.settings import Settings

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
REMOTE = f"https://octo:{TOKEN}@example.com/team/repo.git"


def test_the_entrypoint_carries_the_remote_without_its_credentials() -> None:
    plan = Plan(None, REMOTE, "r-1", "ralph/a/r-1", "abc", ".")  # type: ignore[arg-type]
    command = entrypoint(plan, "a", Settings(), RunRequest())
    assert TOKEN not in command and "octo" not in command
    parsed = job.parse(shlex.split(command)[3:])
    assert parsed.remote == "https://example.com/team/repo.git"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (REMOTE, "https://example.com/team/repo.git"),
        (f"https://{TOKEN}@github.com/o/r.git", "https://github.com/o/r.git"),
        ("ssh://git@host:22/r.git", "ssh://git@host:22/r.git"),  # a user name is no secret
        ("git@github.com:o/r.git", "git@github.com:o/r.git"),
        ("/srv/git/r.git", "/srv/git/r.git"),
    ],
)
def test_public_url(url: str, shown: str) -> None:
    assert public_url(url) == shown


@pytest.mark.parametrize(
    ("settings", "args", "where"),
    [
        (
            {"env": {"DATABASE_URL": "postgres://app:hunter2@db:5432/x"}},
            {},
            "ralph.env.DATABASE_URL",
        ),
        ({"env": {"OPENAI_API_KEY": "x"}}, {}, "ralph.env.OPENAI_API_KEY (its name)"),
        ({"agent_args": ("--token", TOKEN)}, {}, "ralph.agentArgs[1] (a GitHub token)"),
        ({"agent_args": ("--key=sk-ant-api03-" + "x" * 30,)}, {}, "ralph.agentArgs[0] (an API key"),
        ({"env": {"CFG": "AKIAABCDEFGHIJKLMNOP"}}, {}, "ralph.env.CFG (an AWS access key)"),
        ({"env": {"SLACK": "xoxb-1234567890-abcdefghij"}}, {}, "ralph.env.SLACK (a Slack token)"),
        ({}, {"guidance": [f"use {TOKEN} to push"]}, "the run's.guidance[0] (a GitHub token)"),
        (
            {"env": {"BLOB": "q8Zr1Lx0Vb7Nw3Ty6Hu2Ji9Ko4Pm5QaWs8Ed2Rf"}},
            {},
            "a long random-looking value",
        ),
    ],
)
def test_secrets_are_refused_by_value_naming_where_never_the_value(
    settings: dict[str, Any], args: dict[str, Any], where: str
) -> None:
    with pytest.raises(EngineError) as caught:
        check_env(Settings().replace(**settings), args)
    message = str(caught.value)
    assert where in message, message
    for value in ("hunter2", TOKEN, "sk-ant", "AKIA", "xoxb", "q8Zr1"):
        assert value not in message
    assert "worker node's own environment" in message


def test_ordinary_settings_and_arguments_pass() -> None:
    settings = Settings().replace(
        env={"RALPH_DEMO_DELAY": "0", "PATH": "/usr/local/bin:/usr/bin", "MODEL": "gpt-6.1-sol"},
        agent_args=("--model", "claude-sonnet-4-5-20250929", "--cwd", "/home/Me/Projects2024"),
    )
    args = {
        "guidance": ["Keep the public API; see commit 3f9c2a1b4d5e6f708192a3b4c5d6e7f809a1b2c3"],
        "story": "1. First story",
        "scope": "550e8400-e29b-41d4-a716-446655440000",
    }
    check_env(settings, args)  # no error
    assert secret_kind("ThisIsAVeryLongIdentifierName2024xx") is None


class FakeJobs:
    """Ray's JobSubmissionClient as RayRuns uses it: the job is taken, its log is empty."""

    def __init__(self) -> None:
        self.submitted: list[dict[str, Any]] = []

    def submit_job(self, **submit: Any) -> str:
        self.submitted.append(submit)
        return "raysubmit_1"

    async def tail_job_logs(self, job_id: str) -> AsyncIterator[str]:
        for line in ():
            yield line

    def get_job_info(self, job_id: str) -> Any:
        raise RuntimeError("gone")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, timeout=60)


def test_the_record_and_the_log_of_a_run_keep_no_credentials(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=60)
    root = tmp_path / "proj"
    change = root / "openspec" / "changes" / "a"
    change.mkdir(parents=True)
    (change / "tasks.md").write_text("## 1. One\n- [ ] 1.1 one\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "u@example.com")
    _git(root, "config", "user.name", "U")
    _git(root, "config", f"url.{bare}.insteadOf", REMOTE)  # the credentials reach git only
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    seen: list[Any] = []
    runs = RayRuns(on_event=seen.append)
    client = FakeJobs()
    runs._clients[None] = client

    async def go() -> Any:
        await runs.start(root, "a", Settings().replace(ray_git_remote=REMOTE))
        return await asyncio.wait_for(runs.wait(root, "a"), 60)

    final = asyncio.run(go())
    assert final.final
    (submit,) = client.submitted
    assert (
        TOKEN not in json.dumps(submit)
        and "https://example.com/team/repo.git" in submit["entrypoint"]
    )
    logs = [e.text for e in seen if isinstance(e, LogEvent)]
    assert any("of https://example.com/team/repo.git" in text for text in logs), logs
    assert not [text for text in logs if TOKEN in text]
    saved = [p for p in (root / ".ralph").rglob("*") if p.is_file()]
    assert saved and not [p for p in saved if TOKEN.encode() in p.read_bytes()]
    # the push really went through the URL with its credentials (mapped to the bare repo)
    assert subprocess.run(
        ["git", "-C", str(bare), "branch", "--list", "ralph/a/*"], capture_output=True, text=True
    ).stdout.strip()
