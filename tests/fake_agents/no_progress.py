"""Reads the prompt, says something, checks nothing."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn

record_spawn(read_prompt())
print("thinking very hard, changing nothing")
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
