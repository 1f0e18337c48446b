"""`ralph-lsp archive CHANGE --yes` writes nothing through a link and reads main specs with the
size cap (issue 46, fault 2): a linked spec, a dangling link, a linked folder on the way (the
archive's own included) are refused before the first byte, naming the path; no byte outside
the project changes, and the change stays where it was."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from ralph_lsp.archiving.writer import ArchiveBlocked, carry_out, today
from ralph_lsp.openspec.archive_plan import plan_archive
from tests.archive.test_archive_cli import MAIN, project, run

CHANGE = "add-logout"
NO_LINKS = "is a symbolic link: archive writes nothing through links"


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``, links not followed: a file by its bytes' hash, a link by
    where it points, a folder by its name."""
    out: dict[str, str] = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(top) / name
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                out[rel] = f"link -> {os.readlink(path)}"
            elif path.is_dir():
                out[rel] = "folder"
            else:
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def outside(tmp_path: Path) -> Path:
    """Another project beside this one, with a spec and a login script archive must not touch."""
    other = tmp_path / "other"
    (other / "auth").mkdir(parents=True)
    (other / "auth" / "spec.md").write_text(MAIN)
    (other / ".profile").write_text("echo hello\n")
    (other / "archive").mkdir()
    return other


def setup(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    root.mkdir()
    project(root)
    return root, outside(tmp_path)


def _relink(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        target.mkdir(parents=True, exist_ok=True)
        for entry in path.iterdir():
            entry.rename(target / entry.name)
        path.rmdir()
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


#: (the link under the root, where it points under the other project)
LINKS = [
    ("openspec/specs/auth/spec.md", "auth/spec.md"),
    ("openspec/specs/auth", "auth"),
    ("openspec/specs", "specs"),
    ("openspec/changes/archive", "archive"),
    ("openspec/changes", "changes"),
    ("openspec", "openspec"),
]


def refused_nothing_changed(tmp_path: Path, root: Path, other: Path, shown: str) -> None:
    """Run the archive; assert it is refused naming ``shown`` and nothing anywhere changed."""
    before, outside_before = snapshot(root), snapshot(other)
    done = run(root, CHANGE, "--yes")
    assert done.returncode == 1, done.stdout
    assert f"{shown} {NO_LINKS}" in done.stderr
    assert "No files were changed." in done.stderr
    assert snapshot(other) == outside_before, "archive wrote outside the project"
    assert snapshot(root) == before, "a refused archive changed the project"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other", "repo"]


@pytest.mark.parametrize(("link", "target"), LINKS, ids=[link for link, _ in LINKS])
def test_a_link_on_the_way_is_refused_and_nothing_is_written(
    tmp_path: Path, link: str, target: str
) -> None:
    root, other = setup(tmp_path)
    if link == "openspec/changes/archive":
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        (root / link).symlink_to(other / target)
    else:
        _relink(root / link, other / target)
    refused_nothing_changed(tmp_path, root, other, link)
    assert (root / "openspec/changes" / CHANGE / "tasks.md").is_file()


def test_a_dangling_link_is_refused_and_its_target_never_made(tmp_path: Path) -> None:
    root, other = setup(tmp_path)
    (root / "openspec/specs/audit").mkdir()
    (root / "openspec/specs/audit/spec.md").symlink_to(other / ".bash_login")
    refused_nothing_changed(tmp_path, root, other, "openspec/specs/audit/spec.md")
    assert not (other / ".bash_login").exists()


def test_json_names_the_link_with_its_own_code(tmp_path: Path) -> None:
    root, other = setup(tmp_path)
    _relink(root / "openspec/specs/auth/spec.md", other / "auth/spec.md")
    done = run(root, CHANGE, "--yes", "--json")
    assert done.returncode == 1
    [status] = json.loads(done.stdout)["status"]
    assert status["code"] == "archive_path_symlink"
    assert status["message"].startswith(f"openspec/specs/auth/spec.md {NO_LINKS}")


def test_an_oversized_main_spec_is_refused_not_read(tmp_path: Path) -> None:
    root, other = setup(tmp_path)
    spec = root / "openspec/specs/auth/spec.md"
    with spec.open("r+b") as handle:
        handle.truncate((64 << 20) + 1)  # sparse: past the cap without writing 64 MiB
    before, outside_before = snapshot(root), snapshot(other)
    done = run(root, CHANGE, "--yes")
    assert done.returncode == 1
    assert "67,108,865 bytes, over the 64 MiB read: not read" in done.stderr
    assert "No files were changed." in done.stderr
    assert snapshot(root) == before and snapshot(other) == outside_before


def test_a_main_spec_that_is_a_fifo_is_refused_not_replaced(tmp_path: Path) -> None:
    root, _other = setup(tmp_path)
    spec = root / "openspec/specs/auth/spec.md"
    spec.unlink()
    os.mkfifo(spec)
    done = run(root, CHANGE, "--yes")
    assert done.returncode == 1
    assert "is not a regular file (a named pipe): not read" in done.stderr
    assert spec.is_fifo()
    assert (root / "openspec/changes" / CHANGE).is_dir()


@pytest.mark.parametrize(
    ("link", "target"),
    [
        ("openspec/specs/auth/spec.md", "auth/spec.md"),
        ("openspec/specs/audit", "audit"),
        ("openspec/changes/archive", "archive"),
    ],
)
def test_a_link_swapped_in_after_the_checks_loses(tmp_path: Path, link: str, target: str) -> None:
    """The plan checked a clean tree; a link put in before the writes is still not followed:
    the writer opens every folder with O_NOFOLLOW and rolls back what it wrote."""
    root, other = setup(tmp_path)
    (other / "audit").mkdir()
    plan = plan_archive(root, CHANGE, today(), yes=True)
    before = snapshot(root)
    _relink(root / link, other / target)
    before[link] = f"link -> {other / target}"
    outside_before = snapshot(other)
    with pytest.raises(ArchiveBlocked, match=f"{link} {NO_LINKS}"):
        carry_out(plan)
    assert snapshot(other) == outside_before
    assert {k: v for k, v in snapshot(root).items() if not k.startswith(f"{link}/")} == {
        k: v for k, v in before.items() if not k.startswith(f"{link}/")
    }
    assert (root / "openspec/changes" / CHANGE / "tasks.md").is_file()


def test_an_oversized_delta_spec_is_refused_not_read(tmp_path: Path) -> None:
    root, _other = setup(tmp_path)
    delta = root / "openspec/changes" / CHANGE / "specs/audit/spec.md"
    with delta.open("r+b") as handle:
        handle.truncate((64 << 20) + 1)
    before = snapshot(root)
    done = run(root, CHANGE, "--yes", "--json")
    assert done.returncode == 1
    [status] = json.loads(done.stdout)["status"]
    assert status["code"] == "archive_spec_unreadable"
    assert "over the 64 MiB read: not read" in status["message"]
    assert snapshot(root) == before


def test_a_file_where_the_archive_folder_goes_is_refused_before_any_write(tmp_path: Path) -> None:
    root, _other = setup(tmp_path)
    (root / "openspec/changes/archive").write_text("not a folder\n")
    before = snapshot(root)
    done = run(root, CHANGE, "--yes", "--json")
    assert done.returncode == 1
    [status] = json.loads(done.stdout)["status"]
    assert status["code"] == "archive_path_not_a_folder"
    assert status["message"].startswith("openspec/changes/archive is not a folder")
    assert snapshot(root) == before
