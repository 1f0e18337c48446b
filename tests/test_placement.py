"""Where a run executes is decided in one module (issue 45): ``ralph.runner`` is compared with
its values only in ``ralph_lsp/placement.py``, and every layer asks :func:`runs_on_ray`, so a
new runner, or a change of what ``ray`` means, is made in one place."""

from __future__ import annotations

import re
from pathlib import Path

from ralph_lsp.placement import in_own_runner, runs_on_ray
from ralph_lsp.settings import RUNNERS, Settings

PACKAGE = Path(__file__).resolve().parents[1] / "ralph_lsp"
# `settings.runner == "ray"`, `runner != 'local'`, `"ray" == self.settings.runner`, ...
COMPARED = re.compile(
    r"""\brunner\s*[!=]=\s*["'](?:ray|local)["']|["'](?:ray|local)["']\s*[!=]=\s*[\w.]*\brunner\b"""
)


def test_runner_is_compared_in_placement_only() -> None:
    found = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if COMPARED.search(path.read_text(encoding="utf-8"))
    }
    assert found == {"placement.py"}


def test_the_pattern_sees_each_way_of_writing_it() -> None:
    for line in (
        'if settings.runner == "ray":',
        "local = settings.runner != 'ray'",
        'if self.settings.runner != "local":',
        'if "ray" == settings.runner:',
    ):
        assert COMPARED.search(line), line
    assert not COMPARED.search('runner: str = "local"')


def test_runs_on_ray_for_each_runner() -> None:
    assert RUNNERS == ("local", "ray")
    assert runs_on_ray(Settings(runner="ray"))
    assert not runs_on_ray(Settings(runner="local"))
    assert not runs_on_ray(Settings())


# `settings.runs_outlive_editor` read (not written with `replace(runs_outlive_editor=…)`)
OUTLIVE_READ = re.compile(r"\.runs_outlive_editor\b(?!\s*=[^=])")


def test_runs_outlive_editor_is_read_in_placement_only() -> None:
    """Whether the editor's runs go to a runner of their own is read in one module too."""
    found = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if OUTLIVE_READ.search(path.read_text(encoding="utf-8"))
    }
    assert found == {"placement.py"}
    assert OUTLIVE_READ.search("if settings.runs_outlive_editor:")
    assert not OUTLIVE_READ.search("settings.replace(runs_outlive_editor=False)")
    assert in_own_runner(Settings(runs_outlive_editor=True))
    assert not in_own_runner(Settings(runs_outlive_editor=False))
