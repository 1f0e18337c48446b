"""A planner whose first draft fails `validate --strict`; each later spawn fixes exactly the
problems its prompt names (and nothing else), as the change's current state."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn

prompt = read_prompt()
record_spawn(prompt)
folder = Path(re.search(r"^Planning change folder: (.+)$", prompt, re.M).group(1))
spec = folder / "specs" / "widget" / "spec.md"
PROPOSAL = (
    "## Why\nWidgets are made by hand everywhere; one function that makes them saves work.\n\n"
    "## What Changes\n- Add `make_widget`.\n"
)
# the first draft: a requirement with no SHALL/MUST, one without a scenario, no tasks file
DRAFT = (
    "## ADDED Requirements\n\n### Requirement: Make a widget\nThe system makes widgets.\n\n"
    "#### Scenario: One widget\n- **WHEN** a widget is asked for\n- **THEN** one is made\n\n"
    "### Requirement: Name a widget\nThe system SHALL name each widget.\n"
)
KINDS = ("- error: ", "- warning: ", "- tasks: ", "- specs/")
problems = [line[2:] for line in prompt.splitlines() if line.startswith(KINDS)]
if not (folder / "proposal.md").exists():
    (folder / "proposal.md").write_text(PROPOSAL, encoding="utf-8")
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(DRAFT, encoding="utf-8")
    print("first draft written")
    sys.exit(0)
text = spec.read_text(encoding="utf-8")
for problem in problems:
    if "SHALL or MUST" in problem and "Make a widget" in problem:
        text = text.replace("The system makes widgets.", "The system SHALL make widgets.")
    elif "scenario" in problem and "Name a widget" in problem:
        text += "\n#### Scenario: Named\n- **WHEN** a widget is made\n- **THEN** it has a name\n"
    elif problem.startswith("tasks: "):
        (folder / "tasks.md").write_text("## 1. Widgets\n- [ ] 1.1 Add make_widget\n", "utf-8")
    print(f"fixed: {problem}")
spec.write_text(text, encoding="utf-8")
