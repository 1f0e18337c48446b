"""Checks the first unchecked task of tasks.md per spawn, printing plain text lines."""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn, tasks_file

prompt = read_prompt()
record_spawn(prompt)
path = tasks_file(prompt)
text = path.read_text(encoding="utf-8")
new, n = re.subn(r"^(\s*[-*+] )\[ \]", r"\1[x]", text, count=1, flags=re.M)
if n:
    tmp = path.with_name(".tasks.md.tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, path)
    print("checked one task")
else:
    print("nothing left to check")
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
