#!/usr/bin/env python3
"""A benign agent: checks every task of the tasks file its prompt (stdin) names, and leaves a
mark in its working folder that it ran."""

import sys
from pathlib import Path

Path("agent-ran").write_text("yes\n")
for line in sys.stdin.read().splitlines():
    if line.startswith("Tasks file: "):
        tasks = Path(line[len("Tasks file: ") :])
        tasks.write_text(tasks.read_text().replace("- [ ]", "- [x]"), encoding="utf-8")
print("checked every task")
