"""Sandboxed runs (SPEC §10): every process of a run in an OS sandbox, failing closed.

A middle layer beside ``proc/``, ``git/`` and ``agents/``, knowing none of them: it decides
what a run may touch and turns it into the argv prefix a command is started under; ``loop/``
hands that prefix to ``proc/`` (``SpawnSpec.wrapper``), so the watchdog stays outside and its
subreaper still catches everything.

- ``policy.py``: :class:`SandboxPolicy` from plain paths (writable, hidden, read-only again).
- ``bwrap.py``: bubblewrap on Linux: found without root, probed once, the policy's argv.
- ``seatbelt.py``: the macOS ``sandbox-exec`` profile of the same policy (built, untested).
- ``session.py``: one run's :class:`Sandbox` and the fail-closed check (:func:`refusal`).
- ``refusals.py``: what a sandboxed process's output says was refused.
"""

from ralph_lsp.sandbox.policy import SandboxPolicy, build_policy
from ralph_lsp.sandbox.session import Sandbox, SandboxUnavailable, refusal

__all__ = ["Sandbox", "SandboxPolicy", "SandboxUnavailable", "build_policy", "refusal"]
