"""Reads the prompt, says something (nothing with FAKE_SILENT=1), checks nothing, exits
FAKE_EXIT (0)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn

record_spawn(read_prompt())
if os.environ.get("FAKE_SILENT") != "1":
    print("thinking very hard, changing nothing")
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
