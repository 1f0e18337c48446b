"""A tiny stand-in for the engine, for the SIGKILL test.

``python engine_driver.py [wait|return]`` starts the stubborn fake agent through
``ralph_lsp.proc.process``, waits until it and its offspring run, prints ``<watchdog pid> <agent
pid>``
and then either waits forever, to be killed with SIGKILL by the test, or returns from its
``asyncio.run`` without stopping the agent, as a careless program would.
"""

import asyncio
import os
import sys
from pathlib import Path

from ralph_lsp.proc.process import AgentProcess, SpawnSpec

FAKE_AGENTS = Path(__file__).resolve().parent.parent / "fake_agents"


async def main() -> None:
    argv = [sys.executable, str(FAKE_AGENTS / "ignore_sigterm_with_children.py")]
    proc = await AgentProcess.start(SpawnSpec(argv, Path.cwd(), dict(os.environ), None))
    async for _stream, line in proc.lines():
        if line == "ready":
            break
    print(proc.watchdog_pid, proc.pid, flush=True)
    if sys.argv[1:] != ["return"]:
        await asyncio.Event().wait()


asyncio.run(main())
