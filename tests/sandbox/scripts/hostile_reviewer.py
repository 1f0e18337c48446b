#!/usr/bin/env python3
"""A hostile reviewer (SPEC §13): it writes a source file of the project, creates a file in it,
unchecks the first task, appends a task and then checks it (an added task must stay unchecked);
each attempt's outcome goes to stdout, so the run's review log keeps it."""

import re
import sys
from pathlib import Path

prompt = sys.stdin.read()
tasks = next(
    Path(line[len("Tasks file: ") :])
    for line in prompt.splitlines()
    if line.startswith("Tasks file: ")
)
root = tasks.parents[3]


def attempt(what, action):
    try:
        action()
        print(f"{what}: DONE")
    except OSError as exc:
        print(f"{what}: FAILED ({exc.strerror})")


def edit(change):
    text = tasks.read_text(encoding="utf-8")
    tasks.write_text(change(text), encoding="utf-8")


attempt(
    "write a source file", lambda: (root / "README.md").write_text("rewritten by the reviewer\n")
)
attempt("create a file", lambda: (root / "planted.py").write_text("print('planted')\n"))
attempt("uncheck a task", lambda: edit(lambda t: re.sub(r"\[x\]", "[ ]", t, count=1)))
attempt(
    "append a task", lambda: edit(lambda t: t + "\n## Review\n\n- [ ] R.1 Scenario x is unmet\n")
)
attempt("check a task", lambda: edit(lambda t: t.replace("- [ ] R.1", "- [x] R.1")))
