"""`ralph-lsp changes --json` and the server name tasks.md by the URI ``Path.as_uri`` gives."""

from __future__ import annotations

from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from ralph_lsp.workspace import Change, tasks_uri


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
