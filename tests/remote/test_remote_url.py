"""The remote a Ray job clones from, as the operator's repository names it: a relative local
path (``git remote add origin ../shared.git``) means nothing on the worker, so it is made
absolute against the repository; URLs and ``host:path`` are passed on as they are."""

from __future__ import annotations

from pathlib import Path

from ralph_lsp.git.remote import absolute_url


def test_a_relative_path_is_made_absolute_against_the_repository(tmp_path: Path) -> None:
    top = tmp_path / "work"
    assert absolute_url(top, "../shared.git") == str(tmp_path / "shared.git")
    assert absolute_url(top, "remote.git") == str(top / "remote.git")


def test_absolute_paths_urls_and_host_paths_are_left_alone(tmp_path: Path) -> None:
    for url in (
        str(tmp_path / "shared.git"),
        "file:///srv/git/shared.git",
        "https://git.example.com/team/repo.git",
        "ssh://git@git.example.com/team/repo.git",
        "git@git.example.com:team/repo.git",
    ):
        assert absolute_url(tmp_path, url) == url
