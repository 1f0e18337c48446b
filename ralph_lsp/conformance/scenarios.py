"""The scenarios of a change (SPEC §13): every ``#### Scenario: <title>`` under an ADDED or
MODIFIED requirement of its delta specs (``openspec/changes/<name>/specs/<capability>/spec.md``).

Read by the authoring outline (:func:`ralph_lsp.openspec.authoring.outline.outline`), which is
the validation's reader of the CLI's headers: what is a scenario here is what ``openspec
validate`` counts. A scenario's key is ``<capability>/<requirement>/<title>``, its title with its
whitespace collapsed (a test names it so), and it keeps its spec file and 1-based line for the
editor's code lens.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.openspec.authoring.outline import outline
from ralph_lsp.openspec.regular_files import read_regular_text

#: A delta spec (or main spec) larger than this is not read (the validator's own cap is lower).
MAX_SPEC_BYTES = 4 * 1024 * 1024
_COUNTED = ("ADDED", "MODIFIED")


def collapse(text: str) -> str:
    """``text`` with each run of whitespace one space, trimmed: how titles are compared."""
    return " ".join(text.split())


@dataclass(frozen=True)
class Scenario:
    capability: str
    requirement: str
    title: str  # whitespace collapsed
    spec: str  # the spec file, relative to the OpenSpec root, with "/"
    line: int  # 1-based line of its `#### Scenario:` header

    @property
    def key(self) -> str:
        return f"{self.capability}/{self.requirement}/{self.title}"


def _spec_files(specs: Path) -> list[tuple[str, Path]]:
    """(capability, spec.md) for every ``<capability>/spec.md`` below ``specs``, sorted; the
    capability is its folder's path below ``specs`` (nested folders keep their ``/``)."""
    found: list[tuple[str, Path]] = []
    for folder, dirs, files in os.walk(specs):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(folder, d)))
        if "spec.md" in files and folder != str(specs):
            capability = os.path.relpath(folder, specs).replace(os.sep, "/")
            found.append((capability, Path(folder) / "spec.md"))
    return sorted(found)


def _read(path: Path, warnings: list[str], shown: str) -> str | None:
    try:
        return read_regular_text(path, MAX_SPEC_BYTES, follow=False)
    except OSError as exc:
        warnings.append(f"{shown}: not read ({exc.strerror or exc})")
        return None


# (path, mtime_ns, size) → its scenarios: a rescan after a test file's change reads no spec
_PARSED: dict[tuple[str, int, int], tuple[tuple[str, str, int, str | None], ...]] = {}
_PARSED_MAX = 256


def _scenarios_of(path: Path, text: str) -> tuple[tuple[str, str, int, str | None], ...]:
    """(requirement, title, 1-based line, delta section) of each scenario of a spec's text."""
    return tuple(
        (req.name, collapse(sc.name), sc.line + 1, req.delta_key)
        for req in outline(text).requirements
        for sc in req.scenarios
    )


def _cached(
    path: Path, warnings: list[str], shown: str
) -> tuple[tuple[str, int, int] | None, tuple[tuple[str, str, int, str | None], ...]]:
    """The spec's key (None: not stat-ed) and its scenarios, parsed again only when it changed."""
    try:
        st = os.lstat(path)
        key: tuple[str, int, int] | None = (str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key is not None and key in _PARSED:
        return key, _PARSED[key]
    text = _read(path, warnings, shown)
    found = _scenarios_of(path, text) if text is not None else ()
    if key is not None and text is not None:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
            _BUILT.clear()
        _PARSED[key] = found
    else:
        key = None  # not kept: nor are its scenarios
    return key, found


# (spec key, capability, shown, delta) → its Scenario objects: a table per test file change
# builds none again (a frozen dataclass is slow to build, and a change may have thousands)
_BUILT: dict[tuple[tuple[str, int, int], str, str, bool], tuple[Scenario, ...]] = {}


def spec_scenarios(root: Path, specs: Path, *, delta: bool, warnings: list[str]) -> list[Scenario]:
    """The scenarios of every spec below ``specs``: of ADDED/MODIFIED requirements when
    ``delta``, of every requirement otherwise (a main spec). Unreadable files are warnings."""
    out: list[Scenario] = []
    for capability, path in _spec_files(specs):
        shown = os.path.relpath(path, root).replace(os.sep, "/")
        key, parsed = _cached(path, warnings, shown)
        built = _BUILT.get((key, capability, shown, delta)) if key is not None else None
        if built is None:
            built = tuple(
                Scenario(capability, requirement, title, shown, line)
                for requirement, title, line, section in parsed
                if title and (not delta or section in _COUNTED)
            )
            if key is not None:
                _BUILT[(key, capability, shown, delta)] = built
        out.extend(built)
    return out


def change_scenarios(root: Path, change_folder: Path) -> tuple[list[Scenario], list[str]]:
    """The change's scenarios in spec order, and what could not be read."""
    warnings: list[str] = []
    found = spec_scenarios(root, change_folder / "specs", delta=True, warnings=warnings)
    return found, warnings


def main_spec_titles(root: Path) -> list[tuple[str, str]]:
    """(capability, title) of every scenario of the project's main specs (``openspec/specs``):
    a test naming one of these shows the project links scenarios to tests (the ``auto`` gate)."""
    found = spec_scenarios(root, root / "openspec" / "specs", delta=False, warnings=[])
    return [(s.capability, s.title) for s in found]
