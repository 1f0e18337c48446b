"""`ralph-lsp run add-greeting-cli --agent codex|gemini` on a copy of examples/hello, literally as
a new user types it, with the real CLIs (codex 0.169.0, gemini 0.61.0) pointed at a scripted
model on 127.0.0.1 the way the note describes (the CLI's own config file and environment only).

The model follows the prompt (:mod:`.prompt_model`): each session does the first open task of the
story the prompt names with the CLI's own tools, then checks its box. No ralph flag but
``--agent``: the verification (`make test`) is the one ralph finds in the example's Makefile.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ralph_lsp.agents import prompt_argument

from .harness import agent_env
from .prompt_model import plan
from .scripted_servers import ScriptedServer

REPO = Path(__file__).resolve().parent.parent.parent
CHANGE = "add-greeting-cli"


def copy_example(base: Path) -> Path:
    """A copy of examples/hello in a git repository of its own (Codex works only in one)."""
    root = base / "hello"
    shutil.copytree(REPO / "examples" / "hello", root)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], [*git, "commit", "-qm", "init"]):
        subprocess.run(argv, cwd=root, check=True, capture_output=True)
    return root


def run_literally(agent: str, bin_path: Path, url: str, root: Path, base: Path) -> tuple[str, int]:
    """`ralph-lsp run add-greeting-cli --agent AGENT` in ``root``: (stdout, seconds)."""
    env = {
        **agent_env(agent, url, base),  # HOME with the CLI's config, the key, the base URL
        "PATH": os.pathsep.join(
            [str(bin_path.parent), str(Path(sys.executable).parent), "/usr/bin", "/bin"]
        ),
    }
    argv = [sys.executable, "-m", "ralph_lsp", "run", CHANGE, "--agent", agent]
    start = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=root, env={**env, "PYTHONPATH": str(REPO)}, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    return out, round(time.monotonic() - start)


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_example_hello_succeeds_with_verification(
    agent: str, agent_clis: dict[str, Path], base: Path
) -> None:
    root = copy_example(base)
    with ScriptedServer(agent, [], planner=plan) as server:
        out, seconds = run_literally(agent, agent_clis[agent], server.url, root, base)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    assert last.startswith("succeeded:"), out[-4000:]
    assert "verification passed (make test)" in last, last
    tasks = (root / "openspec" / "changes" / CHANGE / "tasks.md").read_text(encoding="utf-8")
    assert "- [ ]" not in tasks and tasks.count("- [x]") == 8, tasks
    assert "⚠ refused" not in out, out[-4000:]
    check = subprocess.run(
        ["make", "test"], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert 'hello = "hello.cli:main"' in (root / "pyproject.toml").read_text(encoding="utf-8")
    assert seconds < 60, (seconds, json.dumps(out[-2000:]))


def test_the_model_follows_a_prompt_handed_over_as_a_file(tmp_path: Path) -> None:
    """A prompt too long for a command line reaches the CLI as a pointer to a file: the model
    reads that file, as a real agent would, and plans the same task."""
    root = tmp_path / "hello"
    shutil.copytree(REPO / "examples" / "hello", root)
    tasks = root / "openspec" / "changes" / CHANGE / "tasks.md"
    prompt = f"Tasks file: {tasks}\nStory in scope: 2\n" + "x" * 200_000
    prompt_file = tmp_path / "prompt.md"
    prompt_file.write_text(prompt, encoding="utf-8")
    pointer = prompt_argument(prompt, prompt_file)
    assert "Tasks file:" not in pointer
    steps = plan("gemini", pointer)
    assert [(s.kind, s.path) for s in steps[:-1]] == [
        ("write", "hello/cli.py"),
        ("edit", f"openspec/changes/{CHANGE}/tasks.md"),
    ]
    assert steps[1].new == "- [x] 2.1 Add the `--shout` flag"
