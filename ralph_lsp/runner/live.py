"""Live runs are discoverable (SPEC §9): ``<root>/.ralph/live/<change>.json``.

The process hosting a run writes the file atomically once the run has claimed its change, keeps
``lastSeen`` fresh every :data:`HEARTBEAT_SECONDS`, and removes it at the run's end. A file names
the host (pid and that pid's start time), the run and its control socket.

:func:`find_live` returns the runs whose host is really alive: the pid runs, it started when the
file says (so a reused pid never counts) and the change's claim (``flock`` on
``.ralph/locks/<change>.lock``) is held. A run whose host is gone is marked ``interrupted`` in its
history record, naming when it was last seen, and its file removed, by whoever finds it first.
Such a run, and a run that ended while nobody watched, leave an *ended* note
(``.ralph/live/<change>.ended.json``, the final status) that the next server to attach takes
(one rename: exactly one taker) to give the run its one run-end notification.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ralph_lsp.runs import durable, ids, safe_dir
from ralph_lsp.runs.history import (
    atomic_write_json,
    history_root,
    process_started_at,
    read_record,
    read_small_file,
)
from ralph_lsp.runs.states import RunState

LIVE_DIR = "live"
LOCKS_DIR = "locks"
HEARTBEAT_SECONDS = 5.0
ENDED_SUFFIX = ".ended.json"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class LiveRun:
    """One live run as its file names it."""

    pid: int
    pid_started_at: str | None
    run_id: str
    change: str
    root: Path
    socket: str
    started_at: str
    last_seen: str
    # The run's latest status (``ralph/runStatus``), refreshed with lastSeen: what an
    # interrupted run is reported with.
    status: dict[str, Any] | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "pid": self.pid,
            "pidStartedAt": self.pid_started_at,
            "runId": self.run_id,
            "change": self.change,
            "root": str(self.root),
            "socket": self.socket,
            "startedAt": self.started_at,
            "lastSeen": self.last_seen,
        }

    @classmethod
    def of_this_process(
        cls,
        run_id: str,
        change: str,
        root: Path,
        socket: str,
        started_at: str,
        status: dict[str, Any],
    ) -> LiveRun:
        """The live file of a host that is this process (its pid and that pid's start time)."""
        pid = os.getpid()
        started = process_started_at(pid)
        return cls(pid, started, run_id, change, root, socket, started_at, now_iso(), status)

    def seen(self, status: dict[str, Any]) -> LiveRun:
        """This file as refreshed now, with the latest status."""
        return replace(self, last_seen=now_iso(), status=status)

    @classmethod
    def from_json(cls, data: Any) -> LiveRun:
        """Raises ValueError/KeyError/TypeError on a file that is not one."""
        if not isinstance(data, dict):
            raise ValueError("not an object")
        pid = data["pid"]
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            raise ValueError("bad pid")
        started = data.get("pidStartedAt")
        return cls(
            pid=pid,
            pid_started_at=started if isinstance(started, str) else None,
            run_id=ids.run_id(data["runId"]),  # never a path: joined under .ralph/ later
            change=ids.change_name(data["change"]),
            root=Path(str(data["root"])),
            socket=str(data["socket"]),
            started_at=str(data["startedAt"]),
            last_seen=str(data["lastSeen"]),
            status=data.get("status") if isinstance(data.get("status"), dict) else None,
        )


def live_dir(root: Path) -> Path:
    return history_root(root) / LIVE_DIR


def live_path(root: Path, change: str) -> Path:
    return ids.child(live_dir(root), f"{ids.change_name(change)}.json")


def write_live(info: LiveRun, *, later: bool = False) -> None:
    """The live file, whole; ``later``: a heartbeat's, made durable off the event loop (its
    ``fsync`` held the server's requests: runs/durable.py), as a run's record is."""
    path = live_path(info.root, info.change)
    if later:
        text = json.dumps(info.to_json(), indent=1, ensure_ascii=False) + "\n"
        durable.write_later(path, lambda f: f.write(text))
    else:
        atomic_write_json(path, info.to_json())


def remove_live(root: Path, change: str, run_id: str) -> None:
    """Remove the change's live file if it still names ``run_id``."""
    path = live_path(root, change)
    info = read_live(path)
    if info is not None and info.run_id == run_id:
        with contextlib.suppress(OSError):
            safe_dir.unlink(path)


def read_live(path: Path) -> LiveRun | None:
    try:
        return LiveRun.from_json(json.loads(read_small_file(path, 64 * 1024)))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def claim_held(root: Path, change: str) -> bool:
    """Whether some open file holds the change's run claim (a shared lock attempt fails)."""
    try:
        lock = ids.child(history_root(root) / LOCKS_DIR, f"{ids.change_name(change)}.lock")
        fd = safe_dir.open_file(lock, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


def _same_process(info: LiveRun) -> bool:
    """The file's pid runs (not a zombie) and started when the file says: never a reused pid."""
    try:
        stat = Path(f"/proc/{info.pid}/stat").read_bytes()
    except OSError:
        return False
    if stat[stat.rfind(b")") + 2 :].split()[:1] == [b"Z"]:
        return False
    started = process_started_at(info.pid)
    return started is not None and started == info.pid_started_at


def process_alive(info: LiveRun) -> bool:
    """The file's process runs: the same pid, started when the file says."""
    return _same_process(info)


def host_alive(info: LiveRun) -> bool:
    """The host runs (the same process as the file names) and holds the change's claim."""
    return _same_process(info) and claim_held(info.root, info.change)


def find_live(root: Path) -> list[LiveRun]:
    """The live runs of ``root``; runs whose host is gone are marked interrupted on the way."""
    found: list[LiveRun] = []
    for name in safe_dir.list_names(live_dir(root)):
        if not name.endswith(".json") or name.endswith(ENDED_SUFFIX) or name.startswith("."):
            continue
        path = live_dir(root) / name
        info = read_live(path)
        if info is None:
            continue
        # A file under root's .ralph/ speaks of a run of root, whatever root it names: a
        # forged one never sends us to probe or claim in another folder.
        info = replace(info, root=root)
        if host_alive(info):
            found.append(info)
        elif _same_process(info):
            continue  # the host lives but has not claimed yet, or is ending: not ours to judge
        else:
            mark_interrupted(root, info)
    return found


def mark_interrupted(root: Path, info: LiveRun) -> dict[str, Any] | None:
    """The host of ``info`` is gone: its record says ``interrupted`` (when it still said
    running), its live file goes, and an ended note is left for the next attach."""
    record = read_record(root, info.run_id)
    status: dict[str, Any] | None = None
    if record is not None and record.get("state") == RunState.RUNNING:
        at = now_iso()
        reason = (
            f"interrupted: its runner (pid {info.pid}) ended without finishing the run;"
            f" last seen {info.last_seen}"
        )
        record["state"] = RunState.INTERRUPTED.value
        record["reason"] = reason
        record["endedAt"] = at
        record.setdefault("transitions", []).append(
            {"state": RunState.INTERRUPTED.value, "at": at, "reason": reason}
        )
        record["lastSeen"] = info.last_seen
        with contextlib.suppress(OSError):
            runs = history_root(root) / "runs"
            atomic_write_json(ids.child(runs, ids.run_id(info.run_id), "record.json"), record)
        status = dict(info.status) if info.status else status_of_record(root, record)
        status.update(state=record["state"], reason=reason, updatedAt=at, phase=None)
        status["waiting"] = None
        with contextlib.suppress(OSError):
            write_ended(root, info.change, status)
    remove_live(root, info.change, info.run_id)
    _remove_socket(root, info)
    return status


def _remove_socket(root: Path, info: LiveRun) -> None:
    """A dead runner's socket: only the one that run's runner made in this user's control
    folder (a forged file cannot name another run's socket, nor a file elsewhere)."""
    from ralph_lsp.runner.control import ControlError, socket_path

    with contextlib.suppress(OSError, ControlError):
        if Path(info.socket) == socket_path(root, info.change, info.run_id):
            Path(info.socket).unlink()


def status_of_record(root: Path, record: dict[str, Any]) -> dict[str, Any]:
    """A ``ralph/runStatus`` object for a record read from disk (its last known numbers)."""
    iterations = record.get("iterations") or []
    last = iterations[-1] if iterations and isinstance(iterations[-1], dict) else {}
    costs = [i.get("costUsd") for i in iterations if isinstance(i, dict) and i.get("costUsd")]
    saved = record.get("progress")
    progress: dict[str, Any] = saved if isinstance(saved, dict) else {}
    return {
        "runId": record.get("runId"),
        "change": record.get("change"),
        "root": root.as_uri(),
        "state": record.get("state"),
        "iteration": int(last.get("n") or 0),
        "maxIterations": int(progress.get("maxIterations") or 0),
        "completed": int(progress.get("completed") or 0),
        "total": int(progress.get("total") or 0),
        "reason": record.get("reason"),
        "startedAt": record.get("startedAt") or now_iso(),
        "updatedAt": record.get("endedAt") or now_iso(),
        "costUsd": sum(costs) if costs else None,
        "story": None,
        "phase": None,
        "waiting": None,
        "worktree": record.get("worktree"),
        "refusals": [],
    }


def ended_path(root: Path, change: str) -> Path:
    return ids.child(live_dir(root), f"{ids.change_name(change)}{ENDED_SUFFIX}")


def write_ended(root: Path, change: str, status: dict[str, Any]) -> None:
    """Leave the final status of a run nobody was told about, for the next attach."""
    atomic_write_json(ended_path(root, change), status)


def take_ended(root: Path) -> list[dict[str, Any]]:
    """The ended notes of ``root``, each taken by exactly one caller (renamed away first)."""
    out: list[dict[str, Any]] = []
    for name in safe_dir.list_names(live_dir(root)):
        if not name.endswith(ENDED_SUFFIX) or name.startswith("."):
            continue
        path = live_dir(root) / name
        taken = live_dir(root) / f".taken-{os.getpid()}-{name}"
        try:
            safe_dir.rename(path, taken)
        except OSError:
            continue  # another taker was first
        try:
            data = json.loads(read_small_file(taken, 1024 * 1024))
        except (OSError, ValueError):
            data = None
        with contextlib.suppress(OSError):
            safe_dir.unlink(taken)
        if isinstance(data, dict):
            out.append(data)
    return out
