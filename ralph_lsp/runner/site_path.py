"""The interpreter's own site-packages for a runner started with ``python -S`` (imported before
anything else of the runner: it needs only the standard library and ``sandbox/bwrap.py``).

The runner starts with ``-S``: no ``.pth`` file of site-packages runs and the workspace's files
are never on the path. But a run reads a change's ``.openspec.yaml`` with PyYAML and a test
report with defusedxml, installed there with ralph-lsp (a detached run of any change with
metadata failed, "No module named 'yaml'", and every run failed once the conformance gate
imported defusedxml). :func:`missing_folders` names the site-packages folders that ``site``
would have put on the path; the runner appends them, after the standard library and the
folder holding ``ralph_lsp``, so nothing there can shadow either.
"""

from __future__ import annotations

import os
import sys

from ralph_lsp.sandbox.bwrap import site_folders


def missing_folders() -> list[str]:
    """The interpreter's site-packages folders not on ``sys.path`` (none when ``site`` ran):
    the environment's (``site_folders``, found beside ``pyvenv.cfg`` under ``-S``), then the
    user's."""
    if not sys.flags.no_site:
        return []
    out: list[str] = []
    for folder in [*site_folders(), _user_site()]:
        if folder and folder not in sys.path and folder not in out and os.path.isdir(folder):
            out.append(folder)
    return out


def _user_site() -> str:
    """``pip install --user``'s folder, where ``site`` would have put it on the path."""
    import site

    return site.getusersitepackages() if site.ENABLE_USER_SITE is not False else ""
