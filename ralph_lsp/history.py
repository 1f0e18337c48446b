"""The operator's record of runs under ``<openspec root>/.ralph/`` (SPEC §3).

Layout::

    .ralph/.gitignore                 "*": history never reaches a commit
    .ralph/runs/<runId>/record.json   the run's record, rewritten atomically on every change
    .ralph/runs/<runId>/iteration-<n>.log   the raw output of iteration n (stdout and stderr)

A record is written to a temporary file, flushed to disk and renamed over the old one, so a crash
leaves either the previous record or the new one, never a torn file. History is for the operator
only: nothing here is ever put in a prompt. When ``.ralph/`` cannot be written, the run goes on,
the record stays in memory, and the problem is reported once.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ralph_lsp.tasks import NotARegularFile, open_regular

HISTORY_DIR = ".ralph"
OWNER_FILE = "owner.pid"


def history_root(root: Path) -> Path:
    return root / HISTORY_DIR


def atomic_write_json(path: Path, data: Any) -> None:
    """Write JSON so that readers (and crashes) only ever see a whole file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, ensure_ascii=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class RunHistory:
    """Writes one run's record and raw logs; never raises on I/O trouble."""

    def __init__(self, root: Path, run_id: str, on_error: Callable[[str], None]) -> None:
        self.dir = history_root(root) / "runs" / run_id
        self._on_error = on_error
        self._failed = False
        self._log: IO[bytes] | None = None
        self._log_bytes = 0
        self.max_log_bytes = 64 * 1024 * 1024
        try:
            base = history_root(root)
            base.mkdir(parents=True, exist_ok=True)
            ignore = base / ".gitignore"
            if not ignore.exists():
                ignore.write_text("*\n", encoding="utf-8")
            self.dir.mkdir(parents=True, exist_ok=True)
            # Who runs this record: lets a reader tell a live run from one whose process died.
            (self.dir / OWNER_FILE).write_text(_process_identity(os.getpid()), encoding="utf-8")
        except OSError as exc:
            self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        if not self._failed:
            self._failed = True
            self._on_error(
                f"history cannot be saved under {self.dir.parent.parent} ({exc.strerror or exc});"
                " the run goes on, and its record is kept in memory only"
            )

    @property
    def ok(self) -> bool:
        return not self._failed

    def save(self, record: dict[str, Any]) -> None:
        if self._failed:
            return
        try:
            atomic_write_json(self.dir / "record.json", record)
        except OSError as exc:
            self._fail(exc)

    def open_iteration_log(self, n: int) -> None:
        self.close_iteration_log()
        if self._failed:
            return
        try:
            self._log = open(self.dir / f"iteration-{n}.log", "ab")  # noqa: SIM115
            self._log_bytes = 0
        except OSError as exc:
            self._fail(exc)

    def write_raw(self, stream: str, chunk: bytes) -> None:
        if self._log is None:
            return
        if self._log_bytes > self.max_log_bytes:
            return
        try:
            self._log.write(chunk)
            self._log_bytes += len(chunk)
            if self._log_bytes > self.max_log_bytes:
                self._log.write(b"\n[ralph: raw log capped at 64 MiB for this iteration]\n")
        except OSError as exc:
            self._log = None
            self._fail(exc)

    def close_iteration_log(self) -> None:
        if self._log is not None:
            try:
                self._log.close()
            except OSError:
                pass
            self._log = None

    def prompt_file(self, n: int) -> Path | None:
        """Where iteration n's prompt is written for agents that take ``{promptFile}``."""
        return None if self._failed else self.dir / f"prompt-{n}.md"


#: The largest record read (a real one is a few KiB per iteration).
MAX_RECORD_BYTES = 16 * 1024 * 1024


def read_small_file(path: Path, max_bytes: int = MAX_RECORD_BYTES) -> str:
    """A regular file's text (a FIFO, a device or an oversized file raises OSError, never
    blocks or fills memory)."""
    fd = open_regular(path, max_bytes)
    with os.fdopen(fd, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NotARegularFile(f"{path} grew past {max_bytes >> 20} MiB while read")
    return data.decode("utf-8", errors="replace")


def load_records(root: Path, change: str | None = None) -> list[dict[str, Any]]:
    """Every readable record under ``root``'s history, newest first; damaged files (and files
    that are not regular files) are skipped."""
    runs = history_root(root) / "runs"
    records: list[dict[str, Any]] = []
    try:
        folders = list(runs.iterdir())
    except OSError:
        return records
    for folder in folders:
        try:
            data = json.loads(read_small_file(folder / "record.json"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("runId"), str):
            continue
        if change is not None and data.get("change") != change:
            continue
        if data.get("state") == "running" and not _owner_alive(folder):
            data["state"] = "failed"
            data["reason"] = (
                "interrupted: the ralph-lsp process running it ended before the run finished"
                f" (last reason: {data.get('reason')})"
            )
        records.append(data)
    records.sort(key=lambda r: (str(r.get("startedAt") or ""), str(r["runId"])), reverse=True)
    return records


def _process_identity(pid: int) -> str:
    """``pid start-time``: the start time (from /proc) tells a reused pid from the original."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        start = stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        start = "?"
    return f"{pid} {start}\n"


def _owner_alive(folder: Path) -> bool:
    """Whether the process that wrote this run's record is still running."""
    if not Path("/proc/self").exists():
        return True  # cannot tell without /proc: trust the record
    try:
        saved = read_small_file(folder / OWNER_FILE, 4096)
        pid = int(saved.split()[0])
    except (OSError, ValueError, IndexError):
        return True  # a record without an owner file: trust it
    if pid == os.getpid():
        return True
    return _process_identity(pid) == saved and Path(f"/proc/{pid}").exists()
