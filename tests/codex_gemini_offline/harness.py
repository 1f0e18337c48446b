"""`ralph-lsp run` with the real Codex or Gemini CLI, offline, on a small project.

The project is a git repository (Codex runs only in one) with one change of two tasks; task 1.1
edits `pyproject.toml` (a build file Gemini protects headless), and the verification command
`make test` checks that edit. The agent's own configuration is written the way a user would:
`$CODEX_HOME/config.toml` (a provider pointing at the scripted server, model gpt-5.5) and
`$HOME/.gemini/settings.json` (API-key auth, no usage statistics, model gemini-2.5-flash).
No extra flag reaches the presets.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .scripted_servers import Step

TASKS = (
    "## 1. Version\n\n"
    "- [ ] 1.1 Set the version in pyproject.toml to 0.2.0\n"
    "- [ ] 1.2 Check it with make test\n"
)
PYPROJECT = '[project]\nname = "demo"\nversion = "0.1.0"\n'
MAKEFILE = "test:\n\tgrep -q 'version = \"0.2.0\"' pyproject.toml\n"
TASKS_PATH = "openspec/changes/demo/tasks.md"


@dataclass
class Project:
    root: Path
    tasks: Path

    def checked(self) -> int:
        return self.tasks.read_text(encoding="utf-8").count("- [x]")


def make_project(base: Path) -> Project:
    root = base / "project"
    folder = root / "openspec" / "changes" / "demo"
    folder.mkdir(parents=True)
    (folder / "proposal.md").write_text("## Why\nOffline agent test.\n", encoding="utf-8")
    (folder / "tasks.md").write_text(TASKS, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "Makefile").write_text(MAKEFILE, encoding="utf-8")
    for argv in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(argv, cwd=root, check=True, capture_output=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
        cwd=root,
        check=True,
        capture_output=True,
    )
    return Project(root, folder / "tasks.md")


def normal_steps(agent: str) -> list[Step]:
    """The model's script for a whole change: the build-file edit, `make test`, both boxes."""
    if agent == "gemini":
        edit = [
            Step("write", path="pyproject.toml.ralph-new", new=PYPROJECT.replace("0.1.0", "0.2.0")),
            Step("shell", command="mv pyproject.toml.ralph-new pyproject.toml"),
        ]
    else:
        edit = [
            Step("edit", path="pyproject.toml", old='version = "0.1.0"', new='version = "0.2.0"')
        ]
    ticks = [Step("edit", path=TASKS_PATH, old=f"- [ ] 1.{i}", new=f"- [x] 1.{i}") for i in (1, 2)]
    if agent == "codex":  # apply_patch replaces whole lines
        lines = TASKS.splitlines()
        ticks = [
            Step("edit", path=TASKS_PATH, old=lines[i], new=lines[i].replace("[ ]", "[x]"))
            for i in (2, 3)
        ]
    return [*edit, Step("shell", command="make test"), *ticks, Step("text", text="Done.")]


def agent_env(agent: str, url: str, base: Path) -> dict[str, str]:
    """The agent's environment (as `--env`) and its user configuration, as a user sets it up."""
    home = base / "agent-home"
    home.mkdir(exist_ok=True)
    env = {"HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": str(base / "agent-tmp")}
    (base / "agent-tmp").mkdir(exist_ok=True)
    if agent == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir()
        provider = (
            f'name = "mock"\nbase_url = "{url}"\nwire_api = "responses"\n'
            'env_key = "MOCK_API_KEY"\nsupports_websockets = false\n'
            "request_max_retries = 0\nstream_max_retries = 0\n"
        )
        (codex_home / "config.toml").write_text(
            'model = "gpt-5.5"\nmodel_provider = "mock"\n\n[analytics]\nenabled = false\n\n'
            f"[features]\nplugins = false\n\n[model_providers.mock]\n{provider}",
            encoding="utf-8",
        )
        env.update(CODEX_HOME=str(codex_home), MOCK_API_KEY="sk-offline-test")
    else:
        gemini_dir = home / ".gemini"
        gemini_dir.mkdir()
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "model": {"name": "gemini-2.5-flash"},
        }
        (gemini_dir / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        env.update(
            GOOGLE_GEMINI_BASE_URL=url,
            GEMINI_API_KEY="offline-test-key",
            GEMINI_CLI_TRUST_WORKSPACE="true",
            GEMINI_CLI_NO_RELAUNCH="true",
        )
    return env


@dataclass
class RalphRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    history: dict[str, Any]

    @property
    def last_line(self) -> str:
        lines = self.stdout.splitlines()
        return lines[-1] if lines else ""

    @property
    def record(self) -> dict[str, Any]:
        runs = self.history.get("runs") or []
        assert runs, f"no run in the history:\n{self.stdout}\n{self.stderr}"
        return runs[0]  # type: ignore[no-any-return]

    def refusals(self) -> list[dict[str, str]]:
        return [r for it in self.record.get("iterations") or [] for r in it.get("refusals") or []]


def ralph_run(
    agent: str,
    bin_path: Path,
    url: str,
    project: Project,
    base: Path,
    *,
    extra: list[str] | None = None,
    timeout: float = 90,
) -> RalphRun:
    """`ralph-lsp run demo --agent AGENT --verify 'make test'` to its end."""
    env = agent_env(agent, url, base)
    own_env = {
        "PATH": os.pathsep.join(
            [
                str(bin_path.parent),
                str(Path(sys.executable).parent),
                "/usr/local/bin",
                "/usr/bin",
                "/bin",
            ]
        ),
        "LANG": "C.UTF-8",
        "HOME": str(base),
        "RALPH_BACKOFF_SECONDS": "1",
    }
    # The agent's home and state folder as a person sets them: in the environment ralph-lsp
    # starts in (the sandbox takes the writable state folder from there, never from --env or
    # ralph.env, which a workspace can set); the rest of the agent's environment as --env.
    own_env.update({k: v for k, v in env.items() if k in ("HOME", "CODEX_HOME", "GEMINI_CLI_HOME")})
    cli = [sys.executable, "-m", "ralph_lsp"]
    argv = [
        *cli, "run", "demo", "--root", str(project.root), "--agent", agent,
        "--verify", "make test", "--iteration-timeout", "60",
        *[a for k, v in env.items() for a in ("--env", f"{k}={v}")],
        *(extra or []),
    ]  # fmt: skip
    start = time.monotonic()
    proc = subprocess.Popen(
        argv, env=own_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
    seconds = time.monotonic() - start
    hist = subprocess.run(
        [*cli, "history", "demo", "--root", str(project.root), "--json"],
        env=own_env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    history = json.loads(hist.stdout) if hist.returncode == 0 and hist.stdout.strip() else {}
    return RalphRun(proc.returncode, out, err, seconds, history)
