"""Fails to start once (exits 7 before printing anything), then checks one task per spawn.

The first spawn leaves the marker file named by $FAKE_MARKER; later spawns find it.
"""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn, tasks_file

prompt = read_prompt()
record_spawn(prompt)
marker = os.environ["FAKE_MARKER"]
if not os.path.exists(marker):
    open(marker, "w").close()
    sys.exit(7)  # silent: a startup error
path = tasks_file(prompt)
text = path.read_text(encoding="utf-8")
new, n = re.subn(r"^(\s*[-*+] )\[ \]", r"\1[x]", text, count=1, flags=re.M)
if n:
    path.write_text(new, encoding="utf-8")
print("checked one task" if n else "nothing left to check")
