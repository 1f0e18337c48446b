"""Sandboxed runs (SPEC §10): the network part so far.

- ``allowlist.py``: the egress allowlist's entry forms and the check of one ``host:port``.
- ``proxy.py``: :class:`~ralph_lsp.sandbox.proxy.EgressProxy`, the asyncio HTTP CONNECT /
  plain-HTTP proxy that lets an agent reach only allowed hosts and reports each refusal.
- ``bridge.py``: a stdlib-only program run inside the sandbox's network namespace that relays a
  127.0.0.1 port there to the proxy's Unix socket, and runs the agent with the proxy variables set.
- ``domains.py``: the allowlist of a run: per preset, the host of a configured base URL, and
  ``ralph.sandbox.allowedDomains``.

Invariant: nothing here imports pygls or lsprotocol; ``bridge.py`` imports only the standard
library (it runs inside the sandbox with ``python -I -S``).
"""
