"""Runners: where a run executes, apart from who watches and steers it (SPEC §9).

- ``events``   THE declaration of the event stream (:data:`~ralph_lsp.runner.events.VERSION`,
  :data:`~ralph_lsp.runner.events.EVENTS`): engine events to versioned JSON lines and back
  (``docs/events.md``);
- ``live``     ``.ralph/live/<change>.json``: :class:`~ralph_lsp.runner.live.LiveRun`,
  :func:`~ralph_lsp.runner.live.find_live` (pid + start time + the change's claim), marking a run
  whose runner is gone ``interrupted``, and the ended note for the next attach;
- ``control``  the control socket's private folder, name and same-user check, and its protocol;
- ``host``     :class:`~ralph_lsp.runner.host.RunHost`: one run's engine in this process, its
  output tail, subscribers (bounded, held back, a stalled one dropped), stop and guide;
- ``client``   start a detached runner (:func:`~ralph_lsp.runner.client.spawn`), follow a live run
  (:class:`~ralph_lsp.runner.client.Attachment`), send it stop or guide;
- ``runs``     :class:`~ralph_lsp.runner.runs.Runs`: the engine's surface for the server, over
  runs hosted here and runs attached to;
- ``queue_host`` :class:`~ralph_lsp.runner.queue_host.QueueHost`: a whole queue in a runner of its
  own, with its live file (``.ralph/live/queues/``) and socket, so a queue outlives the editor;
- ``queue_live`` those live files read: the live queues of a root
  (:func:`~ralph_lsp.runner.queue_live.find_live_queues`) and their ended notes;
- ``site_path`` the interpreter's site-packages, put on a ``python -S`` runner's path first;
- ``__main__`` the detached runner process, ``python -m ralph_lsp.runner`` (``--changes``: a
  queue's).

Invariant: nothing of a run reaches a watcher except through the event stream; a run is live
only while its host's pid (with its start time) runs and holds the change's claim. This package
imports ``loop`` and below, never ``server`` or ``cli``, nor pygls or lsprotocol. Following a
live run imports no engine (``loop/engine.py``, the agents, git): only hosting one does.
"""
