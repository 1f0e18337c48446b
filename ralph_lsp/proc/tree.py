"""A process tree found and signalled: every descendant, the tagged strays, their groups.

The watchdog ends its agent's tree with these (``watchdog.py``), and the engine ends a dead
watchdog's leftovers with them (``stopping.py``). Without a subreaper (the portable inspection)
the tree is also found by its tag, and :func:`stop_the_world` freezes what a scan finds before
it is killed.

Standard library only, like the watchdog that imports it (``python -E -S``).
"""

from __future__ import annotations

import os
import signal
import time

from ralph_lsp.proc import inspection

KILL_CAP = 5.0
"""Seconds of SIGKILL passes before giving up on processes that cannot be killed."""
STRAY_QUIET = 0.3
"""Seconds without a stray in any scan before a tree without a subreaper counts as gone."""


def become_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process (the Linux implementation only)."""
    return inspection.current().become_subreaper()


def read_stat(pid: int) -> inspection.Stat | None:
    """``(state, ppid, pgid, sid)`` of a process, or None if gone."""
    return inspection.current().stat(pid)


def process_table() -> dict[int, inspection.Stat]:
    """Every visible process: pid → ``(state, ppid, pgid, sid)``."""
    return inspection.current().table()


def descendants(root: int, table: dict[int, inspection.Stat] | None = None) -> list[int]:
    """Pids of every live descendant of ``root`` (zombies excluded), parents before children."""
    if table is None:
        table = process_table()
    children: dict[int, list[int]] = {}
    for pid, (_state, ppid, _pgid, _sid) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return [pid for pid in found if table[pid][0] != "Z"]


def is_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    return inspection.is_alive(inspection.current(), pid)


def signal_tree(
    root: int,
    sig: int,
    fallback_groups: tuple[int, ...] = (),
    tag: str | None = None,
    spare: int | None = None,
) -> int:
    """Send ``sig`` to every descendant of ``root``, every process carrying the tree ``tag``
    (see :mod:`ralph_lsp.proc.inspection`), and to their process groups.

    Groups are signalled first: a group kill reaches every member at once, so a process forking
    in the meantime cannot slip through. The caller's own group is never signalled, nor
    ``spare`` and its group (the sandbox around the agent, which must outlive its SIGTERM: see
    ``Watchdog.request_stop``). When no process can be listed, only ``fallback_groups`` are
    signalled. Returns the number of processes found.
    """
    proc = inspection.current()
    table = proc.table()
    pids = descendants(root, table)
    if tag:
        pids += [pid for pid in proc.tagged(tag) if pid not in pids and pid != root]
    own_group = os.getpgrp()
    groups = set(fallback_groups) if not table else set()
    for pid in pids:
        stat = table.get(pid) or proc.stat(pid)
        if stat is not None:
            groups.add(stat.pgid)
    if spare is not None:
        pids = [pid for pid in pids if pid != spare]
        groups.discard(spare)  # the sandbox's group: it and the namespace's init
    for group in groups:
        if group > 1 and group != own_group:
            try:
                os.killpg(group, sig)
            except OSError:
                pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    return len(pids)


def stop_the_world(tag: str, quiet: float = STRAY_QUIET, cap: float = KILL_CAP) -> list[int]:
    """SIGSTOP every process carrying the tree ``tag`` the moment a scan finds it, scanning
    until none found is new for ``quiet`` seconds (at most ``cap``), then SIGKILL them all.

    Without a subreaper (the portable inspection) a process that forks, lets its parent exit and
    forks again is a new pid every few microseconds: killing what a scan found races it, and it
    wins. A stopped process cannot fork, so each one found stays found; SIGKILL needs no SIGCONT.
    Returns the pids stopped and killed."""
    proc = inspection.current()
    frozen: set[int] = set()
    groups: set[int] = set()

    def freeze(pid: int) -> None:
        try:
            os.kill(pid, signal.SIGSTOP)
            if os.getpgid(pid) == pid and pid != os.getpgrp():
                os.killpg(pid, signal.SIGSTOP)  # its group: a child forked before it stopped
                groups.add(pid)
        except OSError:
            pass

    start = last_new = time.monotonic()
    while time.monotonic() - last_new < quiet and time.monotonic() - start < cap:
        new = set(proc.tagged(tag, freeze)) - frozen
        if new:
            frozen |= new
            last_new = time.monotonic()
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
    for pid in frozen:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return sorted(frozen)
