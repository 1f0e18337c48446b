"""Spawning and supervising process trees, so that nothing an agent starts outlives its stop.

- ``process``   :class:`AgentProcess`: one agent under a watchdog, its output read line by line,
  stopped as a whole tree; ``kill_all_now`` for a server that must exit;
- ``spawning``  the agent's program found on the ``PATH`` it will get, the watchdog's command
  line (:class:`~ralph_lsp.proc.spawning.SpawnSpec`), every start failure named with its remedy;
- ``reading``   the output's chunks split into capped lines, handed out in batches or one by
  one, the raw bytes teed to the run's log;
- ``stopping``  a whole tree stopped: through its watchdog when it can, by signals to its
  session, group and tagged or re-parented orphans when it must;
- ``inspection`` processes looked at: ``/proc`` with a child subreaper on Linux, ``psutil``
  elsewhere (``RALPH_PROC=portable``), and the tag every descendant of an agent inherits;
- ``platforms`` the one platform check, apart from ``inspection`` so a command makes it at start
  without importing the inspection interface;
- ``codecache`` the code attrs and dataclasses generate for each class, compiled at a server's
  first start and kept in the user's cache (a third of every later start);
- ``watchdog``  the small process between the engine and one agent: a child subreaper (Linux)
  that kills every descendant when its parent dies or asks;
- ``tree``      a process tree found and signalled (descendants, tagged strays, their groups),
  by the watchdog and by ``stopping``.

Invariant: ``watchdog`` and ``tree`` import only the standard library (the watchdog runs as
``python -E -S``); the package knows nothing of tasks, runs, git or LSP.
"""
