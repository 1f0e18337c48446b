"""The remote runner: ``python -m ralph_lsp.remote`` takes the detached runner's arguments
(``python -m ralph_lsp.runner``, see there) and hosts each run whose ``ralph.runner`` is ``ray``
through :class:`~ralph_lsp.remote.ray_runs.RayRuns`: the run executes as a Ray job, and this process
follows it with the runner's live file, control socket and event stream, so servers, ``ralph-lsp
attach|stop|guide|runs`` and a reloaded window reach it as they reach a local run."""

from __future__ import annotations

import sys

from ralph_lsp.remote.ray_runs import RayRuns
from ralph_lsp.runner.__main__ import run

if __name__ == "__main__":
    sys.exit(run(remote_engine=RayRuns))
