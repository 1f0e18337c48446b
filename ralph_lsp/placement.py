"""Where a run executes (SPEC §9): the one reading of ``ralph.runner`` and of
``ralph.runsOutliveEditor``.

``ralph.runner`` is ``local`` (a run on this machine, in the server or in a runner of its own)
or ``ray`` (a Ray job, its work pushed to a remote and fetched back). Every layer that decides
by it (the CLI, the runner, the queue) asks :func:`runs_on_ray`, so that a third value, or a
change of what ``ray`` means, is made here once (``tests/test_placement.py`` holds it).
``ralph.runsOutliveEditor`` says whether the editor's runs and queues go to a runner process of
their own (:func:`in_own_runner`), which goes on when the editor closes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ralph_lsp.settings import Settings


def runs_on_ray(settings: Settings) -> bool:
    """True when ``settings``' runs execute as Ray jobs, not on this machine."""
    return settings.runner == "ray"


def in_own_runner(settings: Settings) -> bool:
    """True when the editor's runs and queues of ``settings`` are hosted by a runner process of
    their own (``ralph.runsOutliveEditor``), not in the server's."""
    return settings.runs_outlive_editor
