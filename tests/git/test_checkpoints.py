"""Checkpoints, diffs, restore and pruning against real git repositories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ralph_lsp.git import checkpoints as cp
from ralph_lsp.git import refs
from ralph_lsp.git.command import find_repo
from ralph_lsp.git.restore import restore
from tests.git.conftest import NEEDS_GIT, fingerprint, git, init_repo

CHANGE = "add-greeting-cli"

pytestmark = NEEDS_GIT


def recorder(root: Path, run_id: str = "r-1") -> tuple[cp.Checkpointer, list[str]]:
    warnings: list[str] = []
    c = cp.open_checkpointer(root, CHANGE, run_id, warnings.append)
    assert c is not None, warnings
    return c, warnings


def test_checkpoints_leave_everything_of_the_user_as_it_was(project: Path) -> None:
    before = fingerprint(project)
    c, warnings = recorder(project)
    zero, changed = c.record(0)
    # refs/ralph/@<rootId>/<change>/<runId>/<n>: each root's checkpoints apart (issue 25)
    assert zero is not None and zero.ref == f"refs/ralph/{refs.root_id(project)}/{CHANGE}/r-1/0"
    # The user's staged and unstaged work is in the checkpoint, as the files are.
    assert git(project, "show", f"{zero.ref}:notes.txt") == "staged then edited\n"
    assert git(project, "show", f"{zero.ref}:scratch.txt") == "untracked\n"
    assert "debug.log" not in git(project, "ls-tree", "-r", "--name-only", zero.commit)
    assert git(project, "rev-parse", f"{zero.commit}^") == git(project, "rev-parse", "HEAD")
    assert fingerprint(project) == before
    (project / "hello" / "cli.py").write_text("print('hi')\n")
    (project / "scratch.txt").unlink()
    one, changed = c.record(1)
    assert one is not None
    assert sorted(changed) == ["hello/cli.py", "scratch.txt"]
    assert git(project, "rev-parse", f"{one.commit}^").strip() == zero.commit
    after = fingerprint(project)
    assert after["index"] == before["index"]
    assert after["HEAD"] == before["HEAD"] and after["stash"] == before["stash"]
    assert after["branches"] == before["branches"]
    assert warnings == []


def test_identity_is_the_users_or_ralph_lsp(project: Path, tmp_path: Path) -> None:
    c, _ = recorder(project)
    zero, _ = c.record(0)
    assert zero is not None
    assert git(project, "log", "-1", "--format=%an <%ae>", zero.commit).strip() == (
        "Tess Ter <tess@example.com>"
    )
    bare = init_repo(tmp_path / "anon")
    git(bare, "config", "--unset", "user.name")
    git(bare, "config", "--unset", "user.email")
    (bare / "a.txt").write_text("a\n")
    env = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("GIT_AUTHOR")}
    home = os.environ.get("HOME")
    os.environ["HOME"] = str(tmp_path)  # no global identity either
    try:
        c2 = cp.open_checkpointer(bare, CHANGE, "r-2", lambda _m: None)
        assert c2 is not None
        first, _ = c2.record(0)
    finally:
        os.environ.update(env)
        if home is not None:
            os.environ["HOME"] = home
    assert first is not None
    assert git(bare, "log", "-1", "--format=%an <%ae>", first.commit).strip() == (
        "ralph-lsp <ralph-lsp@localhost>"
    )


def test_diff_of_an_iteration_and_the_file_at_a_checkpoint(project: Path) -> None:
    c, _ = recorder(project)
    c.record(0)
    (project / "hello" / "cli.py").write_text("print('one')\n")
    c.record(1)
    (project / "README.md").write_text("changed\n")
    c.record(2)
    repo = find_repo(project)
    assert repo is not None
    n, before, after = refs.iteration_pair(repo, CHANGE, "r-1", 2)
    assert n == 2 and before.ref and before.ref.endswith("/1")
    files = cp.changed_files(repo, before.commit, after.commit)
    assert [(f.path, f.status) for f in files] == [("README.md", "modified")]
    text = cp.patch(repo, before.commit, after.commit)
    assert "+changed" in text and "cli.py" not in text
    assert cp.file_at(repo, after, "hello/cli.py") == b"print('one')\n"
    assert cp.file_at(repo, before, "nope.txt") is None
    with pytest.raises(refs.CheckpointError):
        cp.file_at(repo, after, "../etc/passwd")
    with pytest.raises(refs.CheckpointError, match="iterations: 1, 2"):
        refs.iteration_pair(repo, CHANGE, "r-1", 7)
    assert refs.pick_run(repo, CHANGE, None, []) == "r-1"
    with pytest.raises(refs.CheckpointError):
        refs.resolve_checkpoint(repo, "HEAD~1")


def test_restore_then_undo(project: Path) -> None:
    c, _ = recorder(project)
    c.record(0)
    (project / "hello" / "cli.py").write_text("v1\n")
    one, _ = c.record(1)
    assert one is not None
    (project / "hello" / "cli.py").write_text("v2\n")
    (project / "hello" / "extra" / "deep").mkdir(parents=True)
    (project / "hello" / "extra" / "deep" / "new.py").write_text("agent made this\n")
    (project / "build").mkdir()
    (project / "build" / "out.bin").write_text("ignored build output\n")
    c.record(2)
    index_before = (project / ".git" / "index").read_bytes()
    head_before = git(project, "rev-parse", "HEAD")
    state_before = fingerprint(project)
    repo = find_repo(project)
    assert repo is not None
    result = restore(repo, CHANGE, "r-1", one)
    assert (project / "hello" / "cli.py").read_text() == "v1\n"
    assert not (project / "hello" / "extra").exists()  # the agent's file and its empty folders
    assert (project / "build" / "out.bin").read_text() == "ignored build output\n"
    assert (project / "debug.log").read_text() == "ignored\n"
    assert (project / ".git" / "index").read_bytes() == index_before
    assert git(project, "rev-parse", "HEAD") == head_before
    assert result.undo.ref == f"refs/ralph/{refs.root_id(project)}/{CHANGE}/@undo/1"
    assert sorted(result.removed) == ["hello/extra/deep/new.py"]
    # Undo: back to exactly what was there before the restore.
    again = restore(repo, CHANGE, "r-1", result.undo)
    assert again.undo.ref == f"refs/ralph/{refs.root_id(project)}/{CHANGE}/@undo/2"
    assert fingerprint(project) == state_before


def test_restore_never_overwrites_what_it_could_not_capture(project: Path) -> None:
    c, _ = recorder(project)
    c.record(0)
    (project / "out.log").write_text("x\n")
    git(project, "add", "-f", "out.log")  # tracked though ignored
    one, _ = c.record(1)
    git(project, "rm", "-q", "--cached", "out.log")  # now only ignored
    (project / "out.log").write_text("precious, ignored, not in any checkpoint\n")
    (project / "hello" / "cli.py").write_text("later\n")
    assert one is not None
    repo = find_repo(project)
    assert repo is not None
    result = restore(repo, CHANGE, "r-1", one)
    assert (project / "out.log").read_text().startswith("precious")
    assert ("out.log", "an ignored file is in the way") in result.skipped
    assert not (project / "hello" / "cli.py").exists()


def test_prune_removes_only_the_runs_named(project: Path) -> None:
    for run in ("r-a", "r-b", "r-c"):
        c, _ = recorder(project, run)
        c.record(0)
        c.record(1)
    assert cp.prune(project, CHANGE, ["r-a", "r-b"]) == 4
    listed = git(project, "for-each-ref", "--format=%(refname)", "refs/ralph/")
    here = f"refs/ralph/{refs.root_id(project)}/{CHANGE}"
    assert sorted(listed.split()) == [f"{here}/r-c/0", f"{here}/r-c/1"]


def test_outside_git_checkpoints_are_off_with_a_note(tmp_path: Path) -> None:
    notes: list[str] = []
    assert cp.open_checkpointer(tmp_path, CHANGE, "r-1", notes.append) is None
    assert notes == ["checkpoints are off: the project is not in a git work tree"]


def test_ref_components_are_valid_for_any_change_name(project: Path) -> None:
    name = "weird name..lock~^:"
    warnings: list[str] = []
    c = cp.open_checkpointer(project, name, "r-1", warnings.append)
    assert c is not None
    first, _ = c.record(0)
    assert first is not None and first.ref
    git(project, "check-ref-format", first.ref)
    repo = find_repo(project)
    assert repo is not None
    assert refs.run_ids(repo, name) == ["r-1"]


def test_without_git_installed_checkpoints_are_off_with_a_note(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    notes: list[str] = []
    assert cp.open_checkpointer(project, CHANGE, "r-1", notes.append) is None
    assert notes == ["checkpoints are off: git is not installed (no `git` on PATH)"]
