"""Checks the first unchecked task of tasks.md per spawn; at spawn $FILL_AT (counted in
$FAKE_COUNTER) it then fills the disk with the file $FILL_PATH until the disk says it is full,
and, with $FILL_THEN_PRINT, prints that many lines afterwards (the run's raw log then hits the
full disk while the agent still talks)."""

from __future__ import annotations

import errno
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn, tasks_file

prompt = read_prompt()
record_spawn(prompt)
counter = Path(os.environ["FAKE_COUNTER"])
n = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(n))
path = tasks_file(prompt)
text = path.read_text(encoding="utf-8")
new, checked = re.subn(r"^(\s*[-*+] )\[ \]", r"\1[x]", text, count=1, flags=re.M)
if checked:
    tmp = path.with_name(".tasks.md.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
print("checked one task", flush=True)
if n == int(os.environ.get("FILL_AT", "0")):
    fd = os.open(os.environ["FILL_PATH"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    block = b"\0" * 4096
    try:
        while True:
            os.write(fd, block)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    print("the disk is full", flush=True)
    for i in range(int(os.environ.get("FILL_THEN_PRINT", "0"))):
        print(f"line {i} " + "x" * 200)
