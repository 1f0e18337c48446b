"""The CLI's fast JSON output: json.dumps(indent=2), byte for byte, and the same URIs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from ralph_lsp.cli.jsonout import dumps_indented
from ralph_lsp.openspec.workspace import Change, tasks_uri

_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(_values)
@example({"changes": [{"name": 'é\u2028"x\\', "stories": [], "run": None, "n": -0.0}]})
@example({1: "a non-string key"})
@example([float("inf"), float("nan"), {}, [], ()])
def test_same_bytes_as_json_dumps(value: Any) -> None:
    assert dumps_indented(value) == json.dumps(value, indent=2)


@given(
    st.sampled_from(["/", "/opt", "/home/a b", "/srv/é%#?[x]"]),
    # A folder name: "." and ".." never name a change (a listing never yields them).
    st.text(
        st.characters(blacklist_characters="/\0", blacklist_categories=["Cs"]), min_size=1
    ).filter(lambda s: s not in (".", "..")),
)
@example("/", "c")
def test_tasks_uri_is_the_paths_as_uri(root: str, name: str) -> None:
    change = Change(Path(root), name)
    assert tasks_uri(change) == change.tasks_path.as_uri()
