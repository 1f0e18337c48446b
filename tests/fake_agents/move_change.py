"""Checks the first unchecked task of tasks.md per spawn, and first moves the folder
$FAKE_MOVE_FROM to $FAKE_MOVE_TO (removes it when $FAKE_MOVE_TO is empty) if it is still there:
a change renamed or removed while it waits in a queue."""

from __future__ import annotations

import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn, tasks_file

prompt = read_prompt()
record_spawn(prompt)
source, target = os.environ["FAKE_MOVE_FROM"], os.environ.get("FAKE_MOVE_TO", "")
if os.path.isdir(source):
    if target:
        os.rename(source, target)
    else:
        shutil.rmtree(source)
path = tasks_file(prompt)
text = path.read_text(encoding="utf-8")
new, n = re.subn(r"^(\s*[-*+] )\[ \]", r"\1[x]", text, count=1, flags=re.M)
if n:
    tmp = path.with_name(".tasks.md.tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, path)
print("checked one task" if n else "nothing left to check")
