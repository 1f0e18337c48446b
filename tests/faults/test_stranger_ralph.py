"""A cloned repository's ``.ralph/`` is a stranger's input: nothing in it reaches outside.

Found in review (round four): forged live files whose run id or change is a path made the CLI
delete and create files wherever they pointed; ``.ralph/live`` or ``.ralph/locks`` as a link to
a folder outside made a run replace, delete or truncate the files there; and a client told the
text of ``guide`` to whatever socket a live file named. Each test hashes a folder beside the
project (the "outside") before and after, through the real CLI.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.conftest import make_change
from tests.faults.helpers import FaultEnv, wait_until

RUN_ID = "r-20200101-000000-1abcde"


def tree(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: a file's hash, a link's target, or a folder."""
    out: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            out[rel] = f"link:{os.readlink(path)}"
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def outside(fx: FaultEnv) -> Path:
    """A folder beside the project with files a stranger's ``.ralph/`` would aim at."""
    folder = fx.root.parent / "outside"
    folder.mkdir()
    (folder / "settings.json").write_text('{"editor.fontSize": 14}\n')
    (folder / "Cargo.lock").write_text("# the user's lock file\nversion = 3\n")
    (folder / "notes.txt").write_text("keep me\n")
    return folder


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def forged_live(root: Path, run_id: str, change: str, **more: object) -> dict[str, object]:
    return {
        "pid": more.get("pid", dead_pid()),
        "pidStartedAt": more.get("pidStartedAt", "2000-01-01T00:00:00Z"),
        "runId": run_id,
        "change": change,
        "root": str(root),
        "socket": more.get("socket", "/nonexistent/x.sock"),
        "startedAt": "2020-01-01T00:00:00Z",
        "lastSeen": "2020-01-01T00:00:00Z",
        "status": more.get("status", {"state": "running"}),
    }


def plant_forged_runs(root: Path, outside: Path) -> None:
    """A run live file whose change is an absolute path outside (its record says running, so
    the run "is interrupted"), one whose run id is, and one whose change climbs out."""
    live = root / ".ralph" / "live"
    live.mkdir(parents=True)
    record = root / ".ralph" / "runs" / RUN_ID / "record.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"runId": RUN_ID, "change": "alpha", "state": "running"}))
    by_change = forged_live(root, RUN_ID, str(outside / "victim"))
    (live / "a.json").write_text(json.dumps(by_change))
    (outside / "victim.json").write_text(json.dumps(by_change))  # "its" live file: unlinked
    (live / "b.json").write_text(json.dumps(forged_live(root, str(outside / "run"), "alpha")))
    climbing = forged_live(root, RUN_ID, "../../outside/climb")
    (live / "c.json").write_text(json.dumps(climbing))


@pytest.mark.parametrize(
    "command",
    [["runs"], ["stop", "alpha"], ["attach", "alpha"], ["guide", "alpha", "hello"]],
    ids=["runs", "stop", "attach", "guide"],
)
def test_forged_run_live_files_never_write_outside(
    fx: FaultEnv, outside: Path, command: list[str]
) -> None:
    plant_forged_runs(fx.root, outside)
    before = tree(outside)
    result = fx.ralph(*command, "--root", str(fx.root), timeout=30)
    assert tree(outside) == before, result.stdout + result.stderr
    assert result.returncode == (0 if command == ["runs"] else 1), result.stderr
    if command != ["runs"]:
        assert "has no live run" in result.stderr


LINKED = {
    # the folder made a link, the change run, the file outside it would have hit
    ".ralph": ("alpha", None),
    ".ralph/live": ("settings", "settings.json"),
    ".ralph/locks": ("Cargo", "Cargo.lock"),
    ".ralph/runs": ("alpha", None),
}


@pytest.mark.parametrize("link", sorted(LINKED))
@pytest.mark.parametrize("detach", [False, True], ids=["foreground", "detached"])
def test_a_linked_ralph_folder_refuses_the_run_and_writes_nothing_outside(
    fx: FaultEnv, outside: Path, link: str, detach: bool
) -> None:
    change, _target = LINKED[link]
    if change != "alpha":
        make_change(fx.root, change)
    place = fx.root / link
    place.parent.mkdir(parents=True, exist_ok=True)
    place.symlink_to(outside, target_is_directory=True)
    before = tree(outside)
    extra = ["--detach"] if detach else []
    result = fx.run_cli(change, "--agent-command", fx.agent_command("check"), *extra, timeout=60)
    assert tree(outside) == before, result.stdout + result.stderr
    assert result.returncode != 0, result.stdout + result.stderr
    assert f"{place} is a symbolic link" in result.stderr, result.stderr
    assert fx.spawns() == []  # no agent ever started
    assert "[ ]" in fx.tasks(change).read_text()


def test_a_linked_live_queues_folder_is_never_written_through(fx: FaultEnv, outside: Path) -> None:
    """Below ``.ralph/live``, a link is refused all the same (every component is checked)."""
    from ralph_lsp.runs import safe_dir

    (fx.root / ".ralph" / "live").mkdir(parents=True)
    (fx.root / ".ralph" / "live" / "queues").symlink_to(outside)
    before = tree(outside)
    with pytest.raises(safe_dir.UnsafeFolder, match="queues is a symbolic link"):
        safe_dir.write_text(fx.root / ".ralph" / "live" / "queues" / "notes.txt", "x")
    with pytest.raises(safe_dir.UnsafeFolder):
        safe_dir.unlink(fx.root / ".ralph" / "live" / "queues" / "notes.txt")
    safe_dir.remove_tree(fx.root / ".ralph" / "live" / "queues" / "notes.txt")
    assert tree(outside) == before


FAKE_RUNNER = r"""
import fcntl, json, os, socket, sys
from ralph_lsp.runs.history import process_started_at
root, where, named_pid, log = sys.argv[1:5]
if where == "control":
    from ralph_lsp.runner.control import control_dir
    where = str(control_dir() / "fake-runner.sock")
pid = int(named_pid) or os.getpid()
(os.path.isdir(root + "/.ralph/locks") or os.makedirs(root + "/.ralph/locks"))
os.makedirs(root + "/.ralph/live", exist_ok=True)
lock = open(root + "/.ralph/locks/alpha.lock", "a+")
fcntl.flock(lock, fcntl.LOCK_EX)
server = socket.socket(socket.AF_UNIX)
server.bind(where)
server.listen()
live = {"pid": pid, "pidStartedAt": process_started_at(pid), "runId": "r-20200101-000000-1abcde",
        "change": "alpha", "root": root, "socket": where, "startedAt": "2020-01-01T00:00:00Z",
        "lastSeen": "2020-01-01T00:00:00Z", "status": None}
with open(root + "/.ralph/live/alpha.json", "w") as f:
    json.dump(live, f)
print(where, flush=True)
while True:
    conn, _ = server.accept()
    data = conn.recv(65536)
    with open(log, "ab") as f:
        f.write(data)
    conn.sendall(b'{"type": "reply", "id": 1, "ok": true}\n')
    conn.close()
"""


@pytest.mark.parametrize(
    "where", ["elsewhere", "control"], ids=["socket-elsewhere", "not-the-runner"]
)
def test_guide_reaches_only_the_real_runner(fx: FaultEnv, where: str) -> None:
    """A process that holds the change's claim and listens on a socket is not the runner:
    with its socket outside the control folder, or in it but not the live file's pid."""
    log = fx.tmp / "fake-received"
    sock = str(fx.tmp / "elsewhere.sock") if where == "elsewhere" else "control"
    named = 0 if where == "elsewhere" else os.getpid()  # the file names another live process
    fake = subprocess.Popen(
        [sys.executable, "-c", FAKE_RUNNER, str(fx.root), sock, str(named), str(log)],
        env=fx.env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert fake.stdout is not None
        listening = fake.stdout.readline().strip()
        wait_until(lambda: (fx.root / ".ralph/live/alpha.json").exists(), 10, "the fake's file")
        result = fx.ralph("guide", "alpha", "the secret plan", "--root", str(fx.root))
        assert "guidance queued" not in result.stdout
        assert result.returncode == 1, result.stdout + result.stderr
        assert not log.exists() or b"secret" not in log.read_bytes()
        assert "not connected" in result.stderr or "control folder" in result.stderr
    finally:
        fake.kill()
        fake.wait()
        if where == "control" and listening:
            Path(listening).unlink(missing_ok=True)


def test_a_forged_dead_run_cannot_remove_another_runs_socket(fx: FaultEnv) -> None:
    """Marking a dead run interrupted removes its socket: only the one its runner made, never
    another socket of the control folder that a forged file names."""
    import socket

    where = "from ralph_lsp.runner.control import control_dir; print(control_dir())"
    asked = subprocess.run([sys.executable, "-c", where], env=fx.env, capture_output=True)
    other = Path(asked.stdout.decode().strip()) / "another-run.sock"  # the CLI's folder
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(other))
        live = fx.root / ".ralph" / "live"
        live.mkdir(parents=True)
        forged = forged_live(fx.root, RUN_ID, "alpha", socket=str(other))
        (live / "alpha.json").write_text(json.dumps(forged))
        result = fx.ralph("runs", "--root", str(fx.root))
        assert result.returncode == 0, result.stderr
        assert not (live / "alpha.json").exists()  # the dead run's file goes, as before
        assert other.exists()  # but not the socket it named
    finally:
        listener.close()
        other.unlink(missing_ok=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give .ralph/ to another user")
def test_a_ralph_folder_of_another_user_refuses_the_run(fx: FaultEnv) -> None:
    (fx.root / ".ralph").mkdir()
    os.chown(fx.root / ".ralph", 4321, 4321)
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("check"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{fx.root / '.ralph'} is not owned by you" in result.stderr
    assert fx.spawns() == [] and list((fx.root / ".ralph").iterdir()) == []
