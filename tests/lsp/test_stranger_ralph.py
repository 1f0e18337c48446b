"""Opening a folder whose ``.ralph/`` came with it (a cloned repository) never touches a file
outside it, untrusted or trusted.

Found in review (round four): at ``initialize`` the server looks for live runs and queues; a
forged queue live file whose run id was an absolute or ``../`` path, its pid gone, made it
delete ``<runId>.json`` and create ``<runId>/record.json`` and ``<runId>.ended.json`` wherever
that pointed; a forged run live file's ``change`` did the same with ``<change>.ended.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import copy_example
from tests.faults.test_stranger_ralph import forged_live, tree
from tests.lsp.conftest import CHANGE, StartSession, wait_until

RUN_ID = "r-20200101-000000-1abcde"
SENTINEL = "q-20200101-000000-1abcde"  # a real-looking dead queue: handled last (sorted)


def plant(root: Path, outside: Path) -> Path:
    """Forged queue and run live files aiming outside; returns the sentinel's live file."""
    queues = root / ".ralph" / "live" / "queues"
    queues.mkdir(parents=True)
    for n, target in enumerate([str(outside / "q-abs"), "../../../../outside/q-rel"]):
        forged = forged_live(root, target, "queue")
        (queues / f"a{n}.json").write_text(json.dumps(forged))
    (outside / "q-abs.json").write_text(json.dumps(forged_live(root, "x", "queue")))
    record = root / ".ralph" / "runs" / RUN_ID / "record.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"runId": RUN_ID, "change": CHANGE, "state": "running"}))
    by_change = forged_live(root, RUN_ID, str(outside / "victim"))
    (root / ".ralph" / "live" / "a.json").write_text(json.dumps(by_change))
    (outside / "victim.json").write_text(json.dumps(by_change))
    sentinel = queues / f"{SENTINEL}.json"
    sentinel.write_text(json.dumps(forged_live(root, SENTINEL, SENTINEL)))
    return sentinel


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
async def test_forged_live_files_at_initialize_never_touch_outside(
    workspace: Path, start_session: StartSession, trusted: bool
) -> None:
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("keep me\n")
    sentinel = plant(workspace, outside)
    before = tree(outside)
    await start_session(workspace, init={"trusted": trusted})
    # The server's look for live queues marks the sentinel's dead queue interrupted: by then
    # every forged file (sorted before it) has been looked at too.
    await wait_until(lambda: not sentinel.exists(), timeout=20, what="the dead queue handled")
    await wait_until(
        lambda: not any(p.name.endswith(".ended.json") for p in sentinel.parent.iterdir()),
        timeout=20,
        what="its ended note taken",
    )
    assert tree(outside) == before
    assert not (outside.parent.parent / "outside" / "q-rel").exists()
    assert os.path.exists(workspace / ".ralph" / "live" / "a.json")  # damaged: left, ignored


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RALPH_DEMO_DELAY": "0.01"}
    return subprocess.run(
        [sys.executable, "-m", "ralph_lsp", *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def _stranger_repo(tmp_path: Path) -> Path:
    """A repository whose committed ``.ralph/`` carries forged live files and a link out."""
    src = tmp_path / "stranger"
    copy_example(src)
    live = src / ".ralph" / "live"
    (live / "queues").mkdir(parents=True)
    climb = "../../../../outside"  # from <clone>/.ralph/live: the folder beside "work"
    for n, target in enumerate([f"../{climb}/q-rel", str(tmp_path / "outside" / "q-abs")]):
        (live / "queues" / f"a{n}.json").write_text(json.dumps(forged_live(src, target, "q")))
    (live / "a.json").write_text(json.dumps(forged_live(src, RUN_ID, f"{climb}/victim")))
    (live / "b.json").write_text(json.dumps(forged_live(src, f"{climb}/run", CHANGE)))
    record = src / ".ralph" / "runs" / RUN_ID / "record.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"runId": RUN_ID, "change": CHANGE, "state": "running"}))
    (src / ".ralph" / "locks").symlink_to("../../../outside")  # <clone>/.ralph/locks → outside
    _git(src, "init", "-q")
    _git(src, "add", "-A")
    _git(src, "add", "-f", ".ralph")
    _git(src, "commit", "-q", "-m", "a stranger's repository")
    clone = tmp_path / "work" / "clone"
    clone.parent.mkdir()
    _git(tmp_path, "clone", "-q", str(src), str(clone))
    assert (clone / ".ralph" / "locks").is_symlink()
    return clone


def _around(tmp_path: Path, clone: Path) -> dict[str, str]:
    """Every file around the clone (the clone itself excluded)."""
    return {k: v for k, v in tree(tmp_path).items() if not k.startswith("work/clone")}


async def _open_in_server(start_session: StartSession, clone: Path, trusted: bool) -> None:
    sentinel = clone / ".ralph" / "live" / "queues" / f"{SENTINEL}.json"
    sentinel.write_text(json.dumps(forged_live(clone, SENTINEL, SENTINEL)))
    session = await start_session(clone, init={"trusted": trusted})
    await wait_until(lambda: not sentinel.exists(), timeout=20, what="the dead queue handled")
    if trusted:
        with pytest.raises(Exception, match="is a symbolic link"):
            await session.command("ralph.run", {"change": CHANGE})


async def test_tried_literally_a_cloned_stranger_repository_changes_nothing_around_it(
    tmp_path: Path, start_session: StartSession
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "Cargo.lock").write_text("version = 3\n")
    (outside / "victim.json").write_text("{}\n")
    clone = _stranger_repo(tmp_path)
    before = _around(tmp_path, clone)
    listed = _cli("runs", "--root", str(clone))
    assert listed.returncode == 0, listed.stderr
    argv = ["run", CHANGE, "--root", str(clone), "--agent", "demo", "--verify-when", "off"]
    refused = _cli(*argv)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"{clone / '.ralph' / 'locks'} is a symbolic link" in refused.stderr
    for trusted in (False, True):  # as an editor opens it: untrusted first, then trusted
        await _open_in_server(start_session, clone, trusted)
    assert _around(tmp_path, clone) == before
    assert not (tmp_path.parent / "outside").exists()
    (clone / ".ralph" / "locks").unlink()  # as the refusal says: then the run goes
    ran = _cli(*argv)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert _around(tmp_path, clone) == before
