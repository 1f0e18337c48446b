"""Sandboxed runs (SPEC §10): every process of a run in an OS sandbox, failing closed.

A middle layer beside ``proc/``, ``git/`` and ``agents/``, knowing none of them: it decides
what a run may touch and turns it into the argv prefix a command is started under; ``loop/``
hands that prefix to ``proc/`` (``SpawnSpec.wrapper``), so the watchdog stays outside and its
subreaper still catches everything.

- ``policy.py``: :class:`SandboxPolicy` from plain paths (writable, hidden, read-only again),
  and the reviewer's (``reviewer_policy``: the work tree read-only but the task files).
- ``repository.py``: what the policy grants of the git repository (``git_paths``: the git
  directory writable, hooks and config read-only) and the files that say where it is
  (``git_pointers``), read from the files alone.
- ``bwrap.py``: bubblewrap on Linux: found without root, probed once, the policy's argv.
- ``seatbelt.py``: the macOS ``sandbox-exec`` profile of the same policy (built, untested).
- ``session.py``: one run's :class:`Sandbox` and the fail-closed check (:func:`refusal`).
- ``refusals.py``: what a sandboxed process's output says was refused.
- ``sockets.py``: no host socket in view inside: where this user's run sockets live (hidden
  from every sandbox), a fresh ``/tmp`` and ``/run/user``, ``/dev/null`` over the sockets of
  ``/run``, and the variables naming a host socket removed.
- ``git_guard.py``: :class:`~ralph_lsp.sandbox.git_guard.GitGuard`, what a sandboxed process
  wrote to the files that tell git where the repository is, put back before the host's git.

The network part (the agent's only way out):

- ``allowlist.py``: the egress allowlist's entry forms and the check of one ``host:port``.
- ``proxy.py``: :class:`~ralph_lsp.sandbox.proxy.EgressProxy`, the asyncio HTTP CONNECT /
  plain-HTTP proxy that lets an agent reach only allowed hosts and reports each refusal.
- ``bridge.py``: a stdlib-only program run inside the sandbox's network namespace that relays a
  127.0.0.1 port there to the proxy's Unix socket, and runs the agent with the proxy variables set
  (the agent first: the relay, asyncio's import included, starts after its spawn).
- ``relay.py``: :class:`~ralph_lsp.sandbox.relay.Relay`, the byte relay of the proxy and the
  bridge, and the bridge's serving loop (loaded by the bridge by its path).
- ``domains.py``: the allowlist of a run: per preset, the host of a configured base URL, and
  ``ralph.sandbox.allowedDomains``.

Invariant: no sandbox sees a host socket but its own run's proxy, and only an agent's sandbox
that one (a verification command gets no proxy at all); nothing here imports pygls or
lsprotocol, nor ``proc/``, ``git/`` or ``agents/``; it writes only what it makes for a run and
the git pointers it puts back (never through a link);
``bridge.py`` and ``relay.py`` import only the standard library (they run inside the sandbox with
``python -I -S``).
"""

from ralph_lsp.sandbox.policy import Grants, SandboxPolicy, build_policy
from ralph_lsp.sandbox.session import Sandbox, SandboxUnavailable, refusal

__all__ = ["Grants", "Sandbox", "SandboxPolicy", "SandboxUnavailable", "build_policy", "refusal"]
