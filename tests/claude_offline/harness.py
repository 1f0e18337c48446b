"""Running the real `claude` CLI once against the scripted model, and normalising what it prints.

Shared by the tests in this folder and by `record_fixtures.py` (which writes
`tests/fixtures/claude_real/`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "claude_real"

# The preset's flags (SPEC §4) plus what these tests need (tools allowed without asking).
PRESET_FLAGS = ["--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"]
TEST_FLAGS = ["--allowedTools", "Edit Write Read Bash"]


def offline_env(
    claude_bin: Path, base_url: str, home: Path, *, retries: int | None = 0, **extra: str
) -> dict[str, str]:
    """The clean environment of one offline CLI run (nothing inherited)."""
    env = {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(claude_bin.parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-offline-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    if retries is not None:
        env["CLAUDE_CODE_MAX_RETRIES"] = str(retries)
    env.update(extra)
    return env


def ralph_like_prompt(change_folder: Path) -> str:
    """A prompt shaped like ralph's: it names the change and its tasks.md by absolute path."""
    tasks = change_folder / "tasks.md"
    return (
        f"You are working on the OpenSpec change `{change_folder.name}` in `{change_folder}`.\n"
        f"The task list is `{tasks}`. Do the first unchecked task, then mark it done by "
        "changing its `- [ ]` into `- [x]` in that file. Stop after that task."
    )


@dataclass
class CliRun:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def of_type(self, type_: str, subtype: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e.get("type") == type_ and (subtype is None or e.get("subtype") == subtype)
        ]

    @property
    def result(self) -> dict[str, Any]:
        results = self.of_type("result")
        assert len(results) == 1, f"expected one result event, got {len(results)}:\n{self.stdout}"
        return results[0]


def run_claude(
    claude_bin: Path,
    cwd: Path,
    prompt: str,
    env: dict[str, str],
    *,
    timeout: float = 120,
    extra_args: list[str] | None = None,
) -> CliRun:
    argv = [str(claude_bin), "-p", prompt, *PRESET_FLAGS, *TEST_FLAGS, *(extra_args or [])]
    start = time.monotonic()
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return CliRun(argv, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)


# ---- normalising recorded output ---------------------------------------------------------------

UUID_RE = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
PORT_RE = re.compile(r"127\.0\.0\.1:\d+")
SOCK_RE = re.compile(r"/cc-socks/\d+\.sock")

PROJECT_PLACEHOLDER = "/home/dev/project"
HOME_PLACEHOLDER = "/home/dev"


def _dashed(path: Path) -> str:
    """How the CLI names a project folder under ~/.claude/projects/."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def normalize(text: str, *, project: Path, home: Path) -> str:
    """Replace what is specific to one machine or one run with stable placeholders:
    the project folder → /home/dev/project, HOME → /home/dev, UUIDs → numbered UUIDs (the same
    id keeps the same number), the server's port → 127.0.0.1:8080, the CLI's pid in its socket
    path → 4242."""
    text = text.replace(str(project), PROJECT_PLACEHOLDER)
    text = text.replace(_dashed(project), _dashed(Path(PROJECT_PLACEHOLDER)))
    text = text.replace(str(home), HOME_PLACEHOLDER)
    seen: dict[str, str] = {}

    def uuid(m: re.Match[str]) -> str:
        return seen.setdefault(m.group(0), f"00000000-0000-4000-8000-{len(seen) + 1:012d}")

    text = UUID_RE.sub(uuid, text)
    text = PORT_RE.sub("127.0.0.1:8080", text)
    return SOCK_RE.sub("/cc-socks/4242.sock", text)


def skeleton(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The shape of a stream-json transcript, for comparing a live run with a recording:
    per event its type, subtype, `error`, content block types (and tool names), and for the
    result `is_error`, `api_error_status` and `num_turns`."""
    out: list[tuple[Any, ...]] = []
    for e in lines:
        t = e.get("type")
        if t in ("assistant", "user"):
            blocks = tuple(
                (b.get("type"), b.get("name")) if b.get("type") == "tool_use" else (b.get("type"),)
                for b in (e.get("message") or {}).get("content") or []
                if isinstance(b, dict)
            )
            out.append((t, e.get("error"), blocks))
        elif t == "result":
            out.append(
                (
                    t,
                    e.get("subtype"),
                    e.get("is_error"),
                    e.get("api_error_status"),
                    e.get("num_turns"),
                )
            )
        elif t == "system":
            out.append((t, e.get("subtype"), e.get("error_status"), e.get("error")))
        else:
            out.append((t,))
    return out


def load_fixture(name: str) -> tuple[list[dict[str, Any]], int, str]:
    """(events, exit code, stderr) of a recording in tests/fixtures/claude_real/."""
    events = [
        json.loads(line)
        for line in (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    rc = int((FIXTURES / f"{name}.rc").read_text(encoding="utf-8").strip())
    stderr = (FIXTURES / f"{name}.stderr").read_text(encoding="utf-8")
    return events, rc, stderr


@dataclass(frozen=True)
class Scenario:
    """One recorded situation: how the scripted server answers and how often the CLI retries."""

    mode: str
    retries: int | None = 0  # CLAUDE_CODE_MAX_RETRIES (None: the CLI's default, 10)
    fail_count: int = 1
    retry_after: int | None = 1
    api_key: bool = True  # False: no ANTHROPIC_API_KEY at all
    about: str = ""


SCENARIOS: dict[str, Scenario] = {
    "normal": Scenario("normal", about="a 3-turn run that checks one task (Read, Edit, text)"),
    "rate_limit": Scenario("rate_limit", about="429 rate_limit_error, CLAUDE_CODE_MAX_RETRIES=0"),
    "overloaded": Scenario("overloaded", about="529 overloaded_error, CLAUDE_CODE_MAX_RETRIES=0"),
    "auth": Scenario("auth", about="401 authentication_error, CLAUDE_CODE_MAX_RETRIES=0"),
    "rate_limit_retry": Scenario(
        "rate_limit", retries=None, about="one 429 (retry-after: 1), default retries, then success"
    ),
    "overloaded_retry": Scenario(
        "overloaded", retries=None, about="one 529, default retries, then success"
    ),
    "auth_retry": Scenario(
        "auth", retries=2, about="401 with CLAUDE_CODE_MAX_RETRIES=2: retried, then fails"
    ),
    "no_credentials": Scenario(
        "normal", api_key=False, about="no ANTHROPIC_API_KEY: 'Not logged in', no request made"
    ),
}
