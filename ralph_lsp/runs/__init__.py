"""The run's record: what a run is, what it emits and what it leaves under ``.ralph/``, without
the engine that executes it (SPEC §9, §15).

- ``status.py``   a run's status and the events of an engine (``RunStatus``, ``StatusEvent``,
  ``LogEvent``) and their delivery; ``events.py`` the other events (iteration, verification,
  end); ``states.py`` the run states alone (``RunState``);
- ``request.py``  what one run is asked for beyond its settings (``RunRequest``), spelled out
  once for every host and command line it crosses;
- ``service.py``  what every driver of runs offers (``RunService``: start, wait, stop, guide,
  statuses, shutdown), whatever executes them;
- ``records.py``  the types of a run's record (``RunRecord``, ``IterationRecord``, …);
  ``record_schema.py`` records read back fitted to those types; ``ledger.py`` a record's
  growing lists kept on disk, not in memory;
- ``ids.py``      the ids and change names read back from ``.ralph/``, checked before they become
  a path; ``safe_dir.py`` every file operation under ``.ralph/`` done without following a
  link; ``durable.py`` a record's ``fsync`` and rename, off the event loop, by one writer thread;
- ``history.py``  the operator's record under ``.ralph/`` (``RunHistory``): a run's folder,
  its ``record.json`` and logs, and the retention of old runs; ``claims.py`` one run per change
  on the machine (``ChangeClaim``, an advisory lock held while the run's process lives);
- ``costs.py``    what a spawn and a run spent (tokens, dollars); ``receipts.py`` each
  iteration's receipt and the run's costs.

Invariant: runs/ starts no process, runs no git and speaks to no agent; it imports neither the
engine (``ralph_lsp.loop``) nor ``proc``, ``git``, ``agents`` or ``sandbox``, nor pygls or
lsprotocol, not even for type checking (an import-linter contract that counts type-only
imports), but for one read: ``history.py`` tells a record's owner alive by its start time in
``/proc`` (``proc/inspection.py``, which starts nothing); it is the reader and writer of the
records under ``.ralph/``. Not here: ``loop/budget.py`` (it reads the agents' list prices and
the loop's policy).
"""
