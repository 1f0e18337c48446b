"""Watching folder trees on disk for the edits made outside the editor (agents, git, a shell).

Each root gets one watch, of its ``openspec/`` tree (``root.py``'s ``watch_root``), whose events
serve both the agent's tasks.md edits and OpenSpec validation; a project's test folders get
another for the conformance lenses. The folders are watched, not the files: editors and agents
save by writing a temporary file and renaming it over the old one, and a watch on the file
itself loses it after the first such save.

- ``tree.py``       :class:`~ralph_lsp.server.watching.tree.TreeWatcher`, one inotify watch of a
  tree on the event loop: folders watched as they come and go, the queue's overflow, the top
  folder gone and back, the watch limit met, watchfiles where inotify cannot be had
- ``interests.py``  what the events are for: an ``Interest`` per reader (tasks changed, spec
  files changed, test files changed) that takes the paths it wants and batches them
- ``polling.py``    the folders inotify refused a watch (the per-user limit), listed every second
  and offered to inotify again
- ``fallback.py``   the tree watched with watchfiles
- ``watched.py``   what the poller and the fallback may use of a tree watch (its protocol)
- ``inotify.py``    a small inotify(7) binding over ctypes
- ``root.py``       one root's watch: its ``openspec/`` tree with the two interests
"""
