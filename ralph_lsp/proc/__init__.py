"""Spawning and supervising process trees, so that nothing an agent starts outlives its stop.

- ``process``   :class:`AgentProcess`: one agent under a watchdog, its output read line by line,
  stopped as a whole tree; ``kill_all_now`` for a server that must exit;
- ``watchdog``  the small process between the engine and one agent: a child subreaper (Linux)
  that kills every descendant when its parent dies or asks.

Invariant: ``watchdog`` imports only the standard library (it runs as ``python -E -S``); the
package knows nothing of tasks, runs, git or LSP.
"""
