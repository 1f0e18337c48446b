"""A tiny stand-in for the engine, for the SIGKILL test.

``python engine_driver.py`` starts the stubborn fake agent through ``ralph_lsp.process``, waits
until it and its offspring run, prints ``<watchdog pid> <agent pid>`` and then waits forever, to
be killed with SIGKILL by the test.
"""

import asyncio
import os
import sys
from pathlib import Path

from ralph_lsp.process import AgentProcess, SpawnSpec

FAKE_AGENTS = Path(__file__).resolve().parent.parent / "fake_agents"


async def main() -> None:
    argv = [sys.executable, str(FAKE_AGENTS / "ignore_sigterm_with_children.py")]
    proc = await AgentProcess.start(SpawnSpec(argv, Path.cwd(), dict(os.environ), None))
    async for _stream, line in proc.lines():
        if line == "ready":
            break
    print(proc.watchdog_pid, proc.pid, flush=True)
    await asyncio.Event().wait()


asyncio.run(main())
