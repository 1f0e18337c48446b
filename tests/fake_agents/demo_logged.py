"""The bundled demo agent, with each spawn's prompt recorded in $FAKE_AGENT_LOG: it respects the
story in scope and blocked tasks as a real agent is told to."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, record_spawn

from ralph_lsp.demo.agent import main

prompt = read_prompt()
record_spawn(prompt)
sys.exit(main(["-p", prompt]))
