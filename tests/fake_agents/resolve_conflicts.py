"""Resolves git conflict markers under its working folder by keeping both sides (ours, then
theirs), when its prompt asks for a merge conflict to be resolved. Plain text output."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn

prompt = read_prompt()
record_spawn(prompt)
if "Resolve the merge conflicts" not in prompt:
    print("no conflict to resolve")
    sys.exit(0)
here = Path.cwd()
for path in here.rglob("*"):
    inside = path.relative_to(here).parts
    if ".git" in inside or ".ralph" in inside or not path.is_file():
        continue
    text = path.read_text(encoding="utf-8", errors="replace")
    if "<<<<<<< " not in text:
        continue
    kept = [
        line
        for line in text.splitlines(keepends=True)
        if not line.startswith(("<<<<<<< ", "=======", ">>>>>>> "))
    ]
    path.write_text("".join(kept), encoding="utf-8")
    print(f"resolved {path.name}")
