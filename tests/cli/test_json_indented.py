"""The CLI's fast indented JSON is json.dumps(indent=2), byte for byte."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from ralph_lsp.cli import dumps_indented

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
