"""The operator's record of runs under ``<openspec root>/.ralph/`` (SPEC §3).

Layout::

    .ralph/.gitignore                 "*": history never reaches a commit
    .ralph/runs/<runId>/record.json   the run's record, rewritten atomically on every change
    .ralph/runs/<runId>/iteration-<n>.log   the raw output of iteration n (stdout and stderr)
    .ralph/runs/<runId>/<list>.jsonl  a running record's older entries of a growing list (ledger)

A record is written to a temporary file, flushed to disk and renamed over the old one, so a crash
leaves either the previous record or the new one, never a torn file. History is for the operator
only: nothing here is ever put in a prompt. When ``.ralph/`` cannot be written, the run goes on,
the record stays in memory, and the problem is reported once.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from ralph_lsp.openspec.tasks import read_regular_text
from ralph_lsp.proc import inspection
from ralph_lsp.runs import durable, safe_dir
from ralph_lsp.runs.ids import child
from ralph_lsp.runs.ids import run_id as checked_run_id
from ralph_lsp.runs.ledger import Ranges, write_record
from ralph_lsp.runs.record_schema import normalize_record
from ralph_lsp.runs.states import RunState

HISTORY_DIR = ".ralph"
OWNER_FILE = "owner.pid"
#: The folders of ``.ralph/`` (runs, live files, claims, queues): never links.
SUBFOLDERS = ("runs", "live", "locks", "queues")
RESERVE_FILE = ".reserve"
#: Bytes a run keeps in reserve beside its record: freed when the disk is full, so that the
#: record can still say how the run ended.
RESERVE_BYTES = 512 * 1024
NO_SPACE = "no space left on device"


def no_space(exc: BaseException) -> bool:
    """Whether ``exc`` is a full disk (or quota), from the OS or in a tool's message (git)."""
    if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "no space left on device" in str(exc).lower()


def history_root(root: Path) -> Path:
    return root / HISTORY_DIR


def make_history_root(root: Path) -> Path:
    """``.ralph/`` with its ``.gitignore`` (``*``): whatever is written under it first (a run's
    record, a change's claim) never shows as a change of the user's work tree. Raises OSError."""
    base = history_root(root)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    # Never through a link (safe_dir): a linked .ralph, or folder in it, refuses the run.
    with safe_dir.folder(base, create=True) as fd:
        safe_dir.check_children(fd, base, SUBFOLDERS)
        with contextlib.suppress(FileExistsError):
            ignore = os.open(".gitignore", flags, 0o644, dir_fd=fd)
            try:
                os.write(ignore, b"*\n")
            finally:
                os.close(ignore)
    return base


def atomic_write_json(path: Path, data: Any) -> None:
    """Write JSON so that readers (and crashes) only ever see a whole file."""
    atomic_write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` so that readers (and crashes) only ever see a whole file. Under
    ``.ralph/`` no folder of the path is followed when it is a link (safe_dir)."""
    atomic_write(path, lambda f: f.write(text))


def atomic_write(path: Path, write: Callable[[IO[str]], object]) -> None:
    """:func:`atomic_write_text` of what ``write`` writes, streamed (never one large string)."""
    if safe_dir.is_guarded(path):
        safe_dir.write_stream(path, write)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class RunHistory:
    """Writes one run's record and raw logs; never raises on I/O trouble.

    Raw output is capped at :attr:`max_log_bytes` per iteration and :attr:`max_run_bytes` per
    run: past the run's cap, the oldest iterations' raw logs are removed first (their summaries
    stay in the record). What that takes in memory does not grow with the iterations: the
    closed logs' total size and the range of iterations they belong to; a log's own size is
    read from disk when it is removed.
    """

    max_log_bytes = 64 * 1024 * 1024
    max_run_bytes = 512 * 1024 * 1024

    def __init__(self, root: Path, run_id: str, on_error: Callable[[str], None]) -> None:
        self.dir = child(history_root(root) / "runs", run_id)
        self._on_error = on_error
        self._failed = False
        self._log: IO[bytes] | None = None
        self._log_bytes = 0
        self._log_n = 0  # the iteration whose raw log is open (or was last)
        # Closed raw logs: iterations _oldest.._newest may have one, _kept_bytes in all.
        self._oldest = self._newest = 0
        self._kept_bytes = 0
        self.dropped = Ranges()  # iterations whose raw log was removed for the run's cap
        self.full: str | None = None  # the disk is full: why the run must end
        try:
            make_history_root(root)
            safe_dir.make_folder(self.dir)
            # Who runs this record: lets a reader tell a live run from one whose process died.
            atomic_write_text(self.dir / OWNER_FILE, _process_identity(os.getpid()))
            with open(self.dir / RESERVE_FILE, "wb", opener=safe_dir.opener()) as f:
                f.write(bytes(RESERVE_BYTES))
        except OSError as exc:
            self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        if no_space(exc) and self.full is None:
            # The disk is full: the run is to end (``full`` says why). Raw output stops; the
            # reserve is freed so that the record can still be saved with the run's end.
            self.full = (
                f"{NO_SPACE}: the run's history under {self.dir.parent.parent} could not be"
                " written; free some space, then run again to go on"
            )
            self._on_error(f"history: {exc.strerror or exc}; the run ends after this iteration")
            self.release_reserve()
            return
        if not self._failed:
            self._failed = True
            if self.full is not None:  # still full after the reserve went: said already
                return
            self._on_error(
                f"history cannot be saved under {self.dir.parent.parent} ({exc.strerror or exc});"
                " the run goes on, and its record is kept in memory only"
            )

    def failed_write(self, exc: OSError) -> None:
        """A file of the run's history that the engine itself wrote (a prompt) failed."""
        self._fail(exc)

    def release_reserve(self) -> None:
        with contextlib.suppress(OSError):
            safe_dir.unlink(self.dir / RESERVE_FILE)

    @property
    def ok(self) -> bool:
        return not self._failed

    def save(self, record: Mapping[str, Any], now: bool = False) -> None:
        """Write ``record`` (ledgers streamed whole: runs/ledger.py) as ``record.json``: on disk
        when this returns at the run's end (or ``now``), before it made durable off the loop."""
        if self._failed:
            return
        for _ in range(2):  # once more after a full disk freed the reserve
            try:
                write = durable.write_now if now or record.get("endedAt") else durable.write_later
                write(self.dir / "record.json", lambda f: write_record(f, record))
                return
            except OSError as exc:
                first = self.full is None
                self._fail(exc)
                if not (first and self.full is not None):
                    return

    def ledger_path(self, name: str) -> Path | None:
        """Where the ledger of the record's list ``name`` seals its older entries (None when
        history cannot be written: the ledger then keeps them all in memory)."""
        return None if self._failed else self.dir / f"{name}.jsonl"

    def open_iteration_log(self, n: int) -> None:
        self.close_iteration_log()
        if self._failed or self.full is not None:
            return
        path = self.dir / f"iteration-{n}.log"
        try:
            self._log = open(path, "ab", opener=safe_dir.opener())  # noqa: SIM115
            self._log_bytes = self._log.tell()  # a spawn that did not count wrote here already
        except OSError as exc:
            self._fail(exc)
            return
        if self._newest and n == self._newest:  # closed once already: it is the open one again
            self._kept_bytes = max(0, self._kept_bytes - self._log_bytes)
            self._newest -= 1
        self._log_n = n

    def _run_bytes(self) -> int:
        return self._log_bytes + self._kept_bytes

    def _drop_oldest(self) -> None:
        """Remove the oldest iterations' raw logs until the run is under its cap."""
        while (
            self._oldest
            and self._oldest <= self._newest
            and (self._run_bytes() > self.max_run_bytes)
        ):
            n, path = self._oldest, self.dir / f"iteration-{self._oldest}.log"
            self._oldest += 1
            try:
                size = os.stat(path, follow_symlinks=False).st_size
                safe_dir.unlink(path)
            except OSError:
                continue  # never written (or already gone): nothing to count
            self._kept_bytes = max(0, self._kept_bytes - size)
            self.dropped.add(n)

    def write_raw(self, stream: str, chunk: bytes) -> None:
        if self._log is None:
            return
        if self._log_bytes > self.max_log_bytes:
            return
        try:
            self._log.write(chunk)
            self._log_bytes += len(chunk)
            if self._log_bytes > self.max_log_bytes:
                cap = self.max_log_bytes >> 20
                self._log.write(
                    f"\n[ralph: raw log capped at {cap} MiB for this iteration]\n".encode()
                )
        except OSError as exc:
            self._log = None
            self._fail(exc)
            return
        if self._kept_bytes and self._run_bytes() > self.max_run_bytes:
            self._drop_oldest()

    def close_iteration_log(self) -> None:
        if self._log is not None:
            try:
                self._log.close()
            except OSError:
                pass
            self._log = None
            self._kept_bytes += self._log_bytes
            self._oldest = self._oldest or self._log_n
            self._newest = self._log_n
            self._log_bytes = 0

    def prompt_file(self, n: int) -> Path | None:
        """Where iteration n's prompt is written for agents that take ``{promptFile}``."""
        return None if self._failed or self.full is not None else self.dir / f"prompt-{n}.md"


def with_file_uris(root: Path, record: dict[str, Any]) -> dict[str, Any]:
    """The record with each iteration's ``outputUri`` and ``promptUri``: the ``file:`` URIs of its
    raw output and its prompt under ``.ralph/``, or null where the file is not there (never
    written, or removed by retention), so that a client needs no knowledge of the layout."""
    run_id = record.get("runId")
    iterations = record.get("iterations")
    if not isinstance(run_id, str) or not isinstance(iterations, list):
        return record
    try:  # a record's id from disk is never a path out of .ralph/runs
        folder = child(history_root(root) / "runs", run_id)
    except ValueError:
        return record
    out = []
    for it in iterations:
        n = it.get("n") if isinstance(it, dict) else None
        if isinstance(n, int) and not isinstance(n, bool):
            files = {
                "outputUri": _uri_if_file(folder / f"iteration-{n}.log"),
                "promptUri": _uri_if_file(folder / f"prompt-{n}.md"),
            }
            it = {**it, **files}
        out.append(it)
    return {**record, "iterations": out}


def _uri_if_file(path: Path) -> str | None:
    return path.as_uri() if path.is_file() else None


#: The largest record read (a real one is a few KiB per iteration).
MAX_RECORD_BYTES = 16 * 1024 * 1024


def read_small_file(path: Path, max_bytes: int = MAX_RECORD_BYTES) -> str:
    """A regular file's text (a FIFO, a device or an oversized file raises OSError, never
    blocks or fills memory); a version of it this process is still writing is waited for."""
    durable.settle(path)
    return read_regular_text(path, max_bytes, follow=False)  # only ralph-lsp writes these


def load_records(
    root: Path, change: str | None = None, damaged: list[str] | None = None
) -> list[dict[str, Any]]:
    """Every readable record under ``root``'s history, newest first; damaged files (and files
    that are not regular files) are skipped, and a record with fields of the wrong type is
    normalized (record_schema), noted in ``damaged`` as ``<runId>: <fields>``."""
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
        data, odd = normalize_record(data)
        if odd and damaged is not None:
            damaged.append(f"{data['runId']}: {', '.join(dict.fromkeys(odd))}")
        if data.get("state") == RunState.RUNNING and not _owner_alive(folder):
            data["state"] = RunState.INTERRUPTED.value  # SPEC §9 (v2 said failed)
            data["reason"] = (
                "interrupted: the ralph-lsp process running it ended before the run finished"
                f" (last reason: {data.get('reason')})"
            )
        records.append(data)
    records.sort(key=lambda r: (str(r.get("startedAt") or ""), str(r["runId"])), reverse=True)
    return records


def new_run_id() -> str:
    """A run id, unique on this machine even for runs started in the same second by different
    processes (the pid tells them apart) and sortable by start time."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"r-{stamp}-{os.getpid():x}{os.urandom(2).hex()}"


def process_started_at(pid: int) -> str | None:
    """When process ``pid`` started (ISO 8601, UTC); None where that is unknown."""
    started = inspection.current().start_time(pid)
    if started is None:
        return None
    return (
        datetime.fromtimestamp(started, timezone.utc)
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


def _process_identity(pid: int) -> str:
    """``pid start-time``: the start time tells a reused pid from the original. Both process
    inspections give the same start time (seconds since the epoch, to the hundredth)."""
    started = inspection.current().start_time(pid)
    return f"{pid} {'?' if started is None else f'{started:.2f}'}\n"


def _owner_alive(folder: Path) -> bool:
    """Whether the process that wrote this run's record is still running."""
    try:
        saved = read_small_file(folder / OWNER_FILE, 4096)
        pid = int(saved.split()[0])
    except (OSError, ValueError, IndexError):
        return True  # a record without an owner file: trust it
    if pid == os.getpid():
        return True
    proc = inspection.current()
    return _process_identity(pid) == saved and inspection.is_alive(proc, pid)


def prune_runs(root: Path, change: str, keep: int) -> list[str]:
    """Remove the run folders of ``change`` beyond the newest ``keep`` (runs whose process is
    still alive are never removed). Returns the removed run ids."""
    runs = history_root(root) / "runs"
    try:
        folders = [Path(e.path) for e in os.scandir(runs) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    mine: list[tuple[str, str, Path, bool]] = []
    for folder in folders:
        try:
            data = json.loads(read_small_file(folder / "record.json"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("change") == change:
            running = data.get("state") == RunState.RUNNING and _owner_alive(folder)
            mine.append((str(data.get("startedAt") or ""), folder.name, folder, running))
    mine.sort(reverse=True)
    removed: list[str] = []
    for _, run_id, folder, running in mine[max(0, keep) :]:
        if running:
            continue  # a run still going (here or in another process) keeps its folder
        safe_dir.remove_tree(folder)
        removed.append(run_id)
    return removed


def read_record(root: Path, run_id: str) -> dict[str, Any] | None:
    """One run's record, or None when it cannot be read (or ``run_id`` is no run id)."""
    try:
        path = child(history_root(root) / "runs", checked_run_id(run_id), "record.json")
        data = json.loads(read_small_file(path))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
