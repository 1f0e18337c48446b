"""Shared bits of the fake agents: they are real programs the engine spawns in tests."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def read_prompt() -> str:
    """The prompt from `-p PROMPT`, from `--prompt-file PATH`, or from stdin."""
    args = sys.argv[1:]
    if "-p" in args:
        return args[args.index("-p") + 1]
    if "--prompt-file" in args:
        return Path(args[args.index("--prompt-file") + 1]).read_text(encoding="utf-8")
    return sys.stdin.read()


def tasks_file(prompt: str) -> Path:
    for line in prompt.splitlines():
        if line.startswith("Tasks file: "):
            return Path(line[len("Tasks file: ") :])
    raise SystemExit("fake agent: no 'Tasks file:' line in the prompt")


def record_spawn(prompt: str) -> None:
    """Append this spawn (pid, prompt) to $FAKE_AGENT_LOG, one JSON line per spawn."""
    log = os.environ.get("FAKE_AGENT_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), "prompt": prompt, "argv": sys.argv}) + "\n")
