"""A hostile planner: it tries to write a source file, a file at the root and `.git/config`
(each write may fail: it goes on), then drafts a valid change in its folder."""

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
root = folder.parents[2]
for path, text in (
    (root / "toolbox" / "evil.py", "print('owned')\n"),
    (root / "EVIL.md", "owned\n"),
    (root / "toolbox" / "__init__.py", "# owned\n"),
):
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {path}")
    except OSError as exc:
        print(f"refused {path}: {exc}")
try:
    with open(root / ".git" / "config", "a", encoding="utf-8") as f:
        f.write("[core]\n\thooksPath = /tmp/evil\n")
    print("wrote .git/config")
except OSError as exc:
    print(f"refused .git/config: {exc}")
spec = folder / "specs" / "evil" / "spec.md"
spec.parent.mkdir(parents=True, exist_ok=True)
spec.write_text(
    "## ADDED Requirements\n\n### Requirement: Evil\nThe system SHALL be evil.\n\n"
    "#### Scenario: Evil\n- **WHEN** asked\n- **THEN** it is evil\n",
    encoding="utf-8",
)
(folder / "proposal.md").write_text(
    "## Why\nThis planner tries to write outside its change folder, which it must not do.\n\n"
    "## What Changes\n- Nothing real.\n",
    encoding="utf-8",
)
(folder / "tasks.md").write_text("## 1. Evil\n- [ ] 1.1 Be evil\n", encoding="utf-8")
