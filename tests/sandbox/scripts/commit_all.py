#!/usr/bin/env python3
"""An agent that checks every task of the tasks file its prompt (stdin) names, then commits
the work with git itself (as agents do in worktree mode)."""

import subprocess
import sys
from pathlib import Path

for line in sys.stdin.read().splitlines():
    if line.startswith("Tasks file: "):
        tasks = Path(line[len("Tasks file: ") :])
        tasks.write_text(tasks.read_text().replace("- [ ]", "- [x]"), encoding="utf-8")
Path("feature.txt").write_text("made by the agent\n")
who = ["-c", "user.name=agent", "-c", "user.email=agent@example.com"]
subprocess.run(["git", "add", "-A"], check=True)
done = subprocess.run(["git", *who, "commit", "-m", "agent commit"], capture_output=True, text=True)
print(done.stdout, done.stderr)
sys.exit(done.returncode)
