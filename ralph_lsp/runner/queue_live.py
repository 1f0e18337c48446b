"""A queue's live files (``.ralph/live/queues/``): finding the live queues of a root, and
taking the ended notes of the queues that ended while no editor watched.

Kept apart from :mod:`ralph_lsp.runner.queue_host` (the queue's runner), so that a server
discovering live queues at its start imports no engine.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ralph_lsp.runner.live import LiveRun, live_dir, now_iso, process_alive, read_live
from ralph_lsp.runs import ids, safe_dir
from ralph_lsp.runs.history import atomic_write_json, history_root, read_small_file

QUEUES_LIVE = "queues"
ENDED = ".ended.json"


def queues_live_dir(root: Path) -> Path:
    return live_dir(root) / QUEUES_LIVE


def queue_live_path(root: Path, queue_id: str) -> Path:
    return ids.child(queues_live_dir(root), f"{ids.run_id(queue_id)}.json")


def find_live_queues(root: Path) -> list[LiveRun]:
    """The live queues of ``root``; a queue whose runner is gone is marked interrupted (its
    record and an ended note) and its file removed."""
    found: list[LiveRun] = []
    for name in safe_dir.list_names(queues_live_dir(root)):
        if not name.endswith(".json") or name.endswith(ENDED) or name.startswith("."):
            continue
        info = read_live(queues_live_dir(root) / name)
        if info is None:
            continue
        info = replace(info, root=root)  # a file under root's .ralph/ is of root's queue
        if process_alive(info):
            found.append(info)
        else:
            _interrupted(root, info)
    return found


def _interrupted(root: Path, info: LiveRun) -> None:
    if not ids.is_queue_id(info.run_id):
        return  # a run's live file among the queues': not a queue, never joined as one
    record_path = ids.child(history_root(root) / "queues", info.run_id, "record.json")
    try:
        record = json.loads(read_small_file(record_path))
    except (OSError, ValueError):
        record = info.status
    if isinstance(record, dict) and not record.get("endedAt"):
        record.update(
            state="interrupted",
            endedAt=now_iso(),
            reason=f"interrupted: its runner (pid {info.pid}) ended; last seen {info.last_seen}",
        )
        with contextlib.suppress(OSError):
            atomic_write_json(record_path, record)
            atomic_write_json(ids.child(queues_live_dir(root), f"{info.run_id}{ENDED}"), record)
    with contextlib.suppress(OSError):
        safe_dir.unlink(queue_live_path(root, info.run_id))


def take_ended_queues(root: Path) -> list[dict[str, Any]]:
    """The ended notes of ``root``'s queues, each taken by exactly one caller."""
    out: list[dict[str, Any]] = []
    base = queues_live_dir(root)
    for name in safe_dir.list_names(base):
        if not name.endswith(ENDED) or name.startswith("."):
            continue
        taken = base / f".taken-{os.getpid()}-{name}"
        try:
            safe_dir.rename(base / name, taken)
        except OSError:
            continue
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(read_small_file(taken, 1024 * 1024))
            if isinstance(data, dict):
                out.append(data)
        with contextlib.suppress(OSError):
            safe_dir.unlink(taken)
    return out
