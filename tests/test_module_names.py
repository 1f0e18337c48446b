"""No module name is used by more than two packages of ``ralph_lsp`` (issue 45: five modules
were named ``runs.py``): a name says where a thing is, and a third ``events.py`` would not."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ralph_lsp"


def test_no_module_name_is_used_by_more_than_two_packages() -> None:
    packages: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            packages[path.stem].add(str(path.parent.relative_to(PACKAGE.parent)))
    assert len(packages) > 150, "too few modules: the test reads the wrong folder"
    crowded = {name: sorted(where) for name, where in packages.items() if len(where) > 2}
    assert crowded == {}
