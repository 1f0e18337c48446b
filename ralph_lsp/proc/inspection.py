"""Process inspection: one interface, two implementations.

* ``linux``: reads ``/proc`` and can make a process a child subreaper, so every orphan of an
  agent's tree re-parents to the watchdog and stays findable. The strongest; used on Linux.
* ``portable``: ``psutil`` (children, start times, living or zombie state) on any system, without
  a subreaper. Used wherever ``/proc`` is missing (macOS); ``RALPH_PROC=portable`` forces it on
  Linux, which is how its paths are tested.

Without a subreaper an orphan re-parents to init and leaves the tree. So each agent's tree is
also tagged: the watchdog starts the agent with ``RALPH_LSP_TREE=<tag>`` in its environment,
which every descendant inherits, ``setsid`` and double forks included; :meth:`ProcInfo.tagged`
finds them by it. Only a process that also clears its environment escapes both.

Standard library at import (the watchdog imports this with ``python -E -S``); ``psutil`` is
imported by the portable implementation when first used.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from ralph_lsp.proc.platforms import WINDOWS_REFUSAL as WINDOWS_REFUSAL
from ralph_lsp.proc.platforms import unsupported_platform as unsupported_platform

ENV = "RALPH_PROC"
"""``portable`` or ``linux``: which implementation to use (default: ``linux`` where /proc is)."""
TREE_TAG = "RALPH_LSP_TREE"
"""The environment variable that names the agent tree a process belongs to."""
NAMES = ("linux", "portable")
PROBE_AHEAD = 256
"""Free pids in a row past the newest listed one the portable scan probes before it stops: a
process that hops to a new pid without pause lives for microseconds, always among the newest."""


class Stat(NamedTuple):
    state: str  # "Z" for a zombie; anything else is alive
    ppid: int
    pgid: int
    sid: int


class ProcInfo(Protocol):
    name: str

    def stat(self, pid: int) -> Stat | None:
        """The process's state, parent, group and session; None once it is gone."""

    def table(self) -> dict[int, Stat]:
        """Every visible process."""

    def start_time(self, pid: int) -> float | None:
        """When ``pid`` started, in seconds since the epoch; None if unknown or gone."""

    def become_subreaper(self) -> bool:
        """Make orphaned descendants re-parent to this process; False where impossible."""

    def tagged(self, tag: str, act: Callable[[int], None] | None = None) -> list[int]:
        """Live processes (but this one) whose environment holds ``RALPH_LSP_TREE=tag``;
        ``act(pid)`` is called the moment each is found (to stop it before it can fork)."""


def is_alive(proc: ProcInfo, pid: int) -> bool:
    stat = proc.stat(pid)
    return stat is not None and stat.state != "Z"


class LinuxProc:
    """``/proc`` and ``prctl(PR_SET_CHILD_SUBREAPER)``."""

    name = "linux"
    _boot: float | None = None

    def stat(self, pid: int) -> Stat | None:
        fields = _stat_fields(pid)
        try:
            return Stat(fields[0].decode("ascii", "replace"), *map(int, fields[1:4]))
        except (IndexError, ValueError, TypeError):
            return None

    def table(self) -> dict[int, Stat]:
        table: dict[int, Stat] = {}
        try:
            names = os.listdir("/proc")
        except OSError:
            return table
        for name in names:
            if name.isdigit():
                stat = self.stat(int(name))
                if stat is not None:
                    table[int(name)] = stat
        return table

    def start_time(self, pid: int) -> float | None:
        try:
            ticks = int(_stat_fields(pid)[19])
            if LinuxProc._boot is None:
                with open("/proc/stat", encoding="ascii", errors="replace") as f:
                    line = next(x for x in f if x.startswith("btime "))
                LinuxProc._boot = float(line.split()[1])
        except (OSError, ValueError, IndexError, StopIteration):
            return None
        return ticks / os.sysconf("SC_CLK_TCK") + LinuxProc._boot

    def become_subreaper(self) -> bool:
        if not sys.platform.startswith("linux"):
            return False
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            return int(libc.prctl(36, 1, 0, 0, 0)) == 0  # PR_SET_CHILD_SUBREAPER
        except (OSError, AttributeError):
            return False

    def tagged(self, tag: str, act: Callable[[int], None] | None = None) -> list[int]:
        needle = f"{TREE_TAG}={tag}".encode()
        found = []
        me = os.getpid()
        for name in _listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        found.append(int(name))
                        if act is not None:
                            act(int(name))
            except OSError:
                continue
        return found


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _stat_fields(pid: int) -> list[bytes]:
    """The fields of ``/proc/<pid>/stat`` after the name (state first); [] if gone."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return []
    try:
        data = os.read(fd, 1024)
    except OSError:
        return []
    finally:
        os.close(fd)
    # "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses.
    return data[data.rfind(b")") + 2 :].split()


class PortableProc:
    """``psutil``; no subreaper. Process groups and sessions from ``os.getpgid``/``getsid``."""

    name = "portable"

    def stat(self, pid: int) -> Stat | None:
        ps = _psutil()
        try:
            process = ps.Process(pid)
            with process.oneshot():
                ppid, status = process.ppid(), process.status()
        except (ps.Error, OSError):
            return None
        return _portable_stat(ps, pid, ppid, status)

    def table(self) -> dict[int, Stat]:
        ps = _psutil()
        table: dict[int, Stat] = {}
        for process in ps.process_iter(["ppid", "status"]):
            info = process.info
            if info.get("ppid") is None or info.get("status") is None:
                continue  # gone meanwhile, or not ours to read
            stat = _portable_stat(ps, process.pid, info["ppid"], info["status"])
            if stat is not None:
                table[process.pid] = stat
        return table

    def start_time(self, pid: int) -> float | None:
        ps = _psutil()
        try:
            return float(ps.Process(pid).create_time())
        except (ps.Error, OSError):
            return None

    def become_subreaper(self) -> bool:
        return False

    def tagged(self, tag: str, act: Callable[[int], None] | None = None) -> list[int]:
        """The newest pids first, and then the pids handed out since the listing (up to
        :data:`PROBE_AHEAD` free ones in a row): a process that forks, lets its parent exit and
        forks again without pause is only ever among the newest, gone before an oldest-first
        scan reaches its pid (issue 37: a compiled hopper outlived the run)."""
        ps = _psutil()
        me = os.getpid()
        found: list[int] = []

        def look(pid: int) -> bool:  # False: no such process
            try:
                os.kill(pid, 0)  # a free pid costs a microsecond, not psutil's lookup
            except ProcessLookupError:
                return False
            except OSError:
                return True
            try:
                ours = _environ_holds(ps, pid, TREE_TAG, tag)
            except (ps.Error, OSError):  # gone meanwhile, a zombie, or not ours to read
                return True
            if pid != me and ours and pid not in found:
                found.append(pid)
                if act is not None:
                    act(pid)
            return True

        listed = sorted(ps.pids(), reverse=True)
        pid, free = (listed[0] if listed else 0) + 1, 0
        while free < PROBE_AHEAD:
            free = 0 if look(pid) else free + 1
            pid += 1
        for pid in listed:
            look(pid)
        return found


def _environ_holds(ps: Any, pid: int, name: str, value: str) -> bool:
    """Whether ``pid``'s environment holds ``name=value``. Read from ``/proc/<pid>/environ``
    where there is one (16 µs, against psutil's 130 µs on Linux: longer than a fork, so a
    process hopping pids without pause would always be gone before psutil had read it), else
    through psutil (macOS)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"{name}={value}".encode() in f.read().split(b"\0")
    except FileNotFoundError:
        if os.path.isdir("/proc/self"):
            raise ProcessLookupError(pid) from None
    return bool(ps.Process(pid).environ().get(name) == value)


def _portable_stat(ps: Any, pid: int, ppid: int, status: str) -> Stat | None:
    try:
        pgid, sid = os.getpgid(pid), os.getsid(pid)
    except ProcessLookupError:
        return None
    except (OSError, AttributeError):  # not ours to ask, or no such call (Windows)
        pgid = sid = -1
    return Stat("Z" if status == ps.STATUS_ZOMBIE else "S", ppid, pgid, sid)


def _psutil() -> Any:
    import importlib

    try:
        return importlib.import_module("psutil")
    except ImportError as err:
        raise RuntimeError(
            "ralph-lsp needs the psutil package where /proc is missing (or with "
            f"{ENV}=portable): pip install psutil"
        ) from err


_IMPLS: dict[str, ProcInfo] = {"linux": LinuxProc(), "portable": PortableProc()}
_forced: str | None = None


def has_proc() -> bool:
    return sys.platform.startswith("linux") and os.path.isdir("/proc/self")


def choice() -> str:
    """The implementation's name: forced (the watchdog's ``--proc``), else ``RALPH_PROC``, else
    ``linux`` where ``/proc`` is and ``portable`` elsewhere."""
    if _forced is not None:
        return _forced
    wanted = os.environ.get(ENV, "").strip().lower()
    if wanted == "portable" or not has_proc():
        return "portable"
    return "linux"


def current() -> ProcInfo:
    return _IMPLS[choice()]


def force(name: str | None) -> None:
    """Use ``name`` from now on in this process, whatever the environment says."""
    global _forced
    if name is not None and name not in _IMPLS:
        raise ValueError(f"unknown process inspection {name!r}: one of {', '.join(NAMES)}")
    _forced = name


def psutil_path() -> str | None:
    """The folder holding the ``psutil`` package (for ``python -S``), without importing it."""
    import importlib.util

    spec = importlib.util.find_spec("psutil")
    if spec is None or spec.origin is None:
        return None
    return os.path.dirname(os.path.dirname(spec.origin))
