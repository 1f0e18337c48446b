"""The small process between the engine and one agent.

The engine runs ``python -m ralph_lsp.proc.watchdog`` once per iteration; the watchdog starts the
agent and makes sure that no process of the agent's tree outlives the iteration:

* it is a child subreaper (the ``linux`` process inspection), so every orphaned descendant
  (``setsid``/``nohup`` escapees) is re-parented to it and stays findable through ``/proc``;
  without one (the ``portable`` inspection, on psutil), the agent's environment carries
  ``RALPH_LSP_TREE=<tag>`` and every process holding it is ended too (see ``proc/inspection.py``);
* it starts the agent in a new session, with the working directory and environment it was given
  itself (its own environment is the agent's), and stdin/stdout/stderr it inherited from the
  engine; it then drops its own copies so end-of-file means what it should;
* a control pipe from the engine says ``stop <grace>`` (SIGTERM the tree, SIGKILL after
  ``grace`` seconds); end-of-file on it means the engine died: the tree is ended within
  ``ORPHAN_GRACE`` seconds;
* when the agent exits, every remaining descendant gets SIGTERM, then SIGKILL after
  ``LINGER_GRACE`` seconds;
* a status pipe to the engine carries JSON lines: ``{"pid": N}`` once the agent runs (or
  ``{"error": kind, "errno": E, "message": text}`` if it cannot start), ``{"exit": code}`` when
  the agent has exited (``-N`` for signal N), and ``{"done": true, "exit": code, "leftover":
  [...]}`` once no descendant is left. Then the watchdog exits.

The engine starts it in a session of its own, so a SIGKILL sent to the engine's whole process
group still leaves the watchdog alive to end the tree. It ignores SIGINT (Ctrl-C in a terminal is
the engine's to handle) and SIGHUP, and treats SIGTERM like ``stop``.
Standard library only, and few imports: it starts once per iteration (``psutil`` only with the
portable inspection, found in the ``--libs`` folder).

Usage: ``python -m ralph_lsp.proc.watchdog --control FD --status FD --cwd DIR --exe PATH
[--tag TAG] [--proc linux|portable] [--libs DIR] -- ARGV...``
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
from collections.abc import Mapping

from ralph_lsp.proc import inspection
from ralph_lsp.proc.tree import (
    KILL_CAP,
    STRAY_QUIET,
    become_subreaper,
    descendants,
    signal_tree,
    stop_the_world,
)

ORPHAN_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL when the engine vanished (control pipe EOF)."""
LINGER_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL for descendants still alive after the agent exited."""
SIGTERM_GRACE = 1.0
"""Seconds between SIGTERM and SIGKILL when the watchdog itself receives SIGTERM."""


class Watchdog:
    def __init__(
        self, control_fd: int, status_fd: int, cwd: str, exe: str, argv: list[str], tag: str = ""
    ):
        self.control_fd: int | None = control_fd
        self.status_fd: int | None = status_fd
        self.cwd = cwd
        self.exe = exe
        self.argv = argv
        self.agent_pid = 0
        self.exit_code: int | None = None
        self.deadline: float | None = None  # SIGKILL the tree at this time
        self.term_sent = False
        self.kill_started: float | None = None
        self.control_buffer = b""
        self.tag = tag  # in the agent's environment: finds its tree without a subreaper
        self._quiet_since: float | None = None  # since when no stray was seen (settled())
        self.subreaper = False

    # -- status pipe -------------------------------------------------------------------------
    def report(self, message: dict[str, object]) -> None:
        if self.status_fd is None:
            return
        try:
            os.write(self.status_fd, json.dumps(message).encode() + b"\n")
        except OSError:  # the engine is gone: nobody to tell
            pass

    # -- starting the agent ------------------------------------------------------------------
    def spawn(self) -> bool:
        try:
            os.chdir(self.cwd)
        except OSError as err:
            message = f"the agent's working directory {self.cwd!r} cannot be used: {err.strerror}"
            self.report({"error": "os_error", "errno": err.errno, "message": message})
            return False
        try:
            env = dict(os.environ, **{inspection.TREE_TAG: self.tag}) if self.tag else os.environ
            self.agent_pid = _spawn_in_new_session(self.exe, self.argv, env)
        except OSError as err:
            kind, message = describe_start_error(err, self.argv[0], self.exe)
            self.report({"error": kind, "errno": err.errno, "message": message})
            return False
        self.report({"pid": self.agent_pid})
        return True

    # -- stopping ----------------------------------------------------------------------------
    def request_stop(self, grace: float) -> None:
        deadline = time.monotonic() + max(0.0, grace)
        if self.deadline is None or deadline < self.deadline:
            self.deadline = deadline
        if not self.term_sent:
            self.term_sent = True
            # A sandboxed agent is bubblewrap's child, in a PID namespace of its own: bubblewrap
            # killed by this SIGTERM would take the namespace down with SIGKILL at once, and the
            # agent would never have its grace. So the agent (and what it started) gets the
            # SIGTERM; bubblewrap ends when the agent does, or with the SIGKILL after the grace.
            spare = self.agent_pid if os.path.basename(self.exe) == "bwrap" else None
            groups = () if spare is not None else self.agent_groups()
            signal_tree(os.getpid(), signal.SIGTERM, groups, self.tag, spare=spare)
            if self.deadline <= time.monotonic():
                self.kill_pass()

    def kill_pass(self) -> None:
        if self.kill_started is None:
            self.kill_started = time.monotonic()
        if not self.subreaper and self.tag:
            stop_the_world(self.tag)
        signal_tree(os.getpid(), signal.SIGKILL, self.agent_groups(), self.tag)

    def strays(self) -> list[int]:
        """Processes of the tree that are no longer below this one: none with a subreaper,
        else those carrying the tree's tag (orphans re-parented to init)."""
        if self.subreaper or not self.tag:
            return []
        return inspection.current().tagged(self.tag)

    def settled(self) -> bool:
        """No stray of the tree in any scan for ``STRAY_QUIET`` seconds (at once with a
        subreaper). One empty scan proves nothing: a process that hops to a new pid every few
        milliseconds can be between two pids while /proc is read."""
        if self.subreaper or not self.tag:
            return True
        now = time.monotonic()
        if self.strays():
            self._quiet_since = None
            return False
        if self._quiet_since is None:
            self._quiet_since = now
        return now - self._quiet_since >= STRAY_QUIET

    def agent_groups(self) -> tuple[int, ...]:
        # Without /proc the agent's own group is all that can be named. While the agent is
        # unreaped its pid cannot be reused, so this never reaches an unrelated group.
        return (self.agent_pid,) if self.exit_code is None and self.agent_pid else ()

    # -- the loop ----------------------------------------------------------------------------
    def reap(self) -> bool:
        """Reap every exited child; True once no child is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return False
            if pid == self.agent_pid and self.exit_code is None:
                self.exit_code = os.waitstatus_to_exitcode(status)
                self.report({"exit": self.exit_code})
                if self.deadline is None:
                    # The iteration is over: whatever the agent left behind goes too. (During a
                    # stop the leftovers keep the grace the stop gave them.)
                    self.request_stop(LINGER_GRACE)

    def read_control(self) -> None:
        assert self.control_fd is not None
        try:
            data = os.read(self.control_fd, 4096)
        except OSError:
            data = b""
        if not data:
            os.close(self.control_fd)
            self.control_fd = None
            self.request_stop(ORPHAN_GRACE)
            return
        self.control_buffer += data
        while b"\n" in self.control_buffer:
            line, self.control_buffer = self.control_buffer.split(b"\n", 1)
            words = line.split()
            if words[:1] == [b"stop"]:
                try:
                    grace = float(words[1]) if len(words) > 1 else 0.0
                except ValueError:
                    grace = 0.0
                self.request_stop(grace if grace == grace else 0.0)  # NaN → 0

    def supervise(self, wake_r: int) -> list[int]:
        """Run until no descendant is left; returns the pids that could not be killed."""
        poller = select.poll()  # not select(): the engine's fd numbers may exceed FD_SETSIZE
        poller.register(wake_r, select.POLLIN)
        if self.control_fd is not None:
            poller.register(self.control_fd, select.POLLIN)
        while True:
            if self.reap() and (self.exit_code is None or self.settled()):
                return []
            now = time.monotonic()
            if self.deadline is not None and now >= self.deadline:
                if self.kill_started is not None and now - self.kill_started > KILL_CAP:
                    return descendants(os.getpid()) + self.strays()
                self.kill_pass()
                timeout = 0.01
            elif self.deadline is not None:
                # At most a second at a time: poll() takes an int of milliseconds, which a huge
                # grace (--stop-grace 3000000) would overflow.
                timeout = min(self.deadline - now, 1.0)
            else:
                timeout = 1.0  # a missed SIGCHLD costs at most this long
            ready = {fd for fd, _event in poller.poll(max(1, int(timeout * 1000 + 0.999)))}
            if wake_r in ready:
                try:
                    signals = os.read(wake_r, 512)
                except BlockingIOError:
                    signals = b""
                if signal.SIGTERM in signals:
                    self.request_stop(SIGTERM_GRACE)
            if self.control_fd is not None and self.control_fd in ready:
                control_fd = self.control_fd
                self.read_control()
                if self.control_fd is None:  # end-of-file: closed, stop watching it
                    poller.unregister(control_fd)

    def run(self) -> int:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, _noop)
        signal.signal(signal.SIGTERM, _noop)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.subreaper = become_subreaper()
        for fd in (self.control_fd, self.status_fd, wake_r, wake_w):
            if fd is not None:
                os.set_inheritable(fd, False)

        started = self.spawn()
        # Drop our copies of the agent's stdin/stdout/stderr: the engine's end-of-file on
        # stdout/stderr and EPIPE on stdin must depend on the agent's tree only.
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
        if not started:
            return 127

        try:
            leftover = self.supervise(wake_r)
        except BaseException:
            # A bug here must not orphan the tree: end it outright before going down.
            for _ in range(100):
                if not signal_tree(os.getpid(), signal.SIGKILL, self.agent_groups(), self.tag):
                    break
                self.reap()
            raise
        self.report({"done": True, "exit": self.exit_code, "leftover": leftover[:50]})
        return 0


_DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGXFSZ)
"""Signals the watchdog (or Python) ignores; the agent gets their default disposition back."""


def _spawn_in_new_session(exe: str, argv: list[str], env: Mapping[str, str]) -> int:
    try:
        return os.posix_spawn(
            exe, argv, env, setsid=True, setsigdef=_DEFAULT_SIGNALS, setsigmask=()
        )
    except NotImplementedError:  # no POSIX_SPAWN_SETSID here: fork and exec by hand
        pass
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.setsid()
            for signum in _DEFAULT_SIGNALS:
                signal.signal(signum, signal.SIG_DFL)
            os.execve(exe, argv, env)
        finally:
            os._exit(127)
    return pid


def _noop(signum: int, frame: object) -> None:
    """A Python-level handler, so the C handler writes the signal to the wakeup fd."""


def describe_start_error(err: OSError, name: str, exe: str) -> tuple[str, str]:
    """``(kind, message)`` for an agent that could not be started; the message says what to do."""
    import errno

    hint = "install it, or set ralph.agentCommand to a program that can run"
    if err.errno == errno.ENOENT:
        return (
            "not_found",
            f"agent program {name!r} ({exe}) could not be started: it or the interpreter named "
            f"on its first line (#!) was not found; {hint}",
        )
    if err.errno in (errno.EACCES, errno.EPERM, errno.EISDIR):
        return (
            "not_executable",
            f"agent program {name!r} ({exe}) is not executable ({err.strerror}); "
            f"make it executable (chmod +x), or {hint}",
        )
    if err.errno == errno.ENOEXEC:
        return (
            "not_executable",
            f"agent program {name!r} ({exe}) is not a program this system can run (no '#!' line "
            f"or wrong architecture); {hint}",
        )
    if err.errno == errno.E2BIG:
        return (
            "os_error",
            f"could not start agent program {name!r}: its command line is too long; pass the "
            "prompt with {promptFile} or on stdin instead of {prompt}",
        )
    return "os_error", f"could not start agent program {name!r} ({exe}): {err.strerror or err}"


def _parse(args: list[str]) -> Watchdog:
    if "--" not in args:
        raise SystemExit(
            "usage: python -m ralph_lsp.proc.watchdog --control FD --status FD "
            "--cwd DIR --exe PATH [--tag TAG] [--proc linux|portable] [--libs DIR] -- ARGV..."
        )
    split = args.index("--")
    options = dict(zip(args[:split:2], args[1:split:2], strict=False))
    argv = args[split + 1 :]
    if not argv:
        raise SystemExit("ralph_lsp.watchdog: no agent command after --")
    if "--libs" in options:  # psutil, for the portable inspection (run with -S)
        sys.path.append(options["--libs"])
    inspection.force(options.get("--proc"))
    return Watchdog(
        control_fd=int(options["--control"]),
        status_fd=int(options["--status"]),
        cwd=options.get("--cwd", "."),
        exe=options.get("--exe", argv[0]),
        argv=argv,
        tag=options.get("--tag", ""),
    )


def main(args: list[str] | None = None) -> int:
    return _parse(sys.argv[1:] if args is None else args).run()


if __name__ == "__main__":
    sys.exit(main())
