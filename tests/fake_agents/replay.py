"""Replays a recorded agent run: `replay.py STDOUT_FILE [STDERR_FILE] [RC]`."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn

args = [a for a in sys.argv[1:]]
if "-p" in args:
    i = args.index("-p")
    del args[i : i + 2]
record_spawn(read_prompt() if "-p" in sys.argv else "")
out = args[0]
err = args[1] if len(args) > 1 else ""
rc = int(args[2]) if len(args) > 2 else 0
with open(out, "rb") as f:
    sys.stdout.buffer.write(f.read())
sys.stdout.flush()
if err:
    with open(err, "rb") as f:
        sys.stderr.buffer.write(f.read())
sys.exit(rc)
