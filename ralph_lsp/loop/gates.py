"""The last gate of a run (SPEC §13 "Review"): what happens once tasks, verification and
conformance pass.

The policy (``policy.py``) decides success from tasks.md, the verification and the conformance
table; :func:`after_gates` is where that success is handed on before the run ends. A reviewer
round (an independent agent that may append tasks) runs here; until it is built, the success
stands as the policy said it.
"""

from __future__ import annotations

from typing import Any

from ralph_lsp.loop import policy
from ralph_lsp.loop.states import RunState


async def after_gates(run: Any, decision: policy.Decision) -> policy.Decision:
    """``decision`` after the review round: a success may become a Continue (the reviewer
    appended tasks) or an end; any other decision passes unchanged."""
    del run  # the reviewer round's run (its change, settings, sandbox and record)
    if not isinstance(decision, policy.End) or decision.state is not RunState.SUCCEEDED:
        return decision
    return decision
