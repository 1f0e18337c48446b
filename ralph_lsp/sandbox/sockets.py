"""The host's sockets and a run's sandbox (SPEC §10): no host socket is in view inside.

``connect()`` works on a Unix socket in a read-only mount, and the same uid passes every peer
check, so a socket a sandboxed process can see is a socket it can use: another run's control
socket (``guide``, ``stop``: code execution outside the sandbox for a run that has none),
another run's egress proxy (its allowlist), ssh-agent, the D-Bus session bus (``systemd-run
--user``), X11 and Wayland. So:

- :func:`private_folder` is where this user's run sockets live (``$XDG_RUNTIME_DIR/ralph``,
  else ``<tmp>/ralph-<uid>``, else the next place where a socket's path is short enough; mode
  0700, refused when anybody else's or open to others): the control sockets, and each run's
  proxy in a folder of its own (:func:`proxy_folder`: 0700, a random name).
  :func:`private_folders` names every place it may be for this user, whatever the
  environment that started a run: each is hidden from every sandbox.
- :func:`cover_argv` is what bubblewrap lays over the host right after ``--ro-bind / /``:
  a fresh ``/tmp`` (the X11 folder, ssh-agent's, every ``ralph-proxy-*``) and ``/run/user``
  (the session bus, Wayland, every ``$XDG_RUNTIME_DIR``), ``/dev/null`` over each socket a
  bounded walk of ``/run`` and ``/var/tmp`` finds (the system bus, a container engine's), and
  the interpreter that runs the bridge bound back when it lives under a covered folder. What
  the run may write (its work tree, its own temporary folder) is bound after it, and the fresh
  folders are then made read-only (``bwrap.argv``): a write there fails as before.
- :data:`UNSET_VARIABLES` are removed from every environment inside (they would only name a
  socket that is not there).

Abstract Unix sockets (``@/tmp/.X11-unix/X0``, some D-Bus buses) belong to a network
namespace: the sandbox's ``--unshare-net`` leaves none of the host's in reach.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

#: Folders laid over with an empty tmpfs inside every sandbox.
COVERED = ("/tmp", "/run/user")
#: Folders walked for sockets at a sandbox's start (each found one is covered by /dev/null).
WALKED = ("/run", "/var/tmp")
WALK_DEPTH = 4
WALK_ENTRIES = 5000  # a /var/tmp full of build trees is not walked to its end
#: Variables that name a host socket or display; none is set inside.
UNSET_VARIABLES = (
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "XDG_RUNTIME_DIR",
    "GNOME_KEYRING_CONTROL",
)


#: A Unix socket's path is at most 107 bytes (sun_path's 108, its NUL included): the longest
#: name put in the private folder is 26 of them (``/`` and a control socket's ``<20 hex>.sock``,
#: or a proxy's ``proxy-XXXXXXXX/proxy.sock``).
MAX_SOCKET_PATH = 107
SOCKET_NAME_ROOM = 26


def private_folder() -> Path:
    """This user's folder for run sockets, made if needed (mode 0700, ours): the first place of
    :func:`private_folders`' that leaves room for a socket's name (a long ``TMPDIR``, as a
    test runner's or a CI's, would make a socket's path too long to bind: the next place is
    taken, ``/tmp/ralph-<uid>`` at the last). ``OSError`` when it cannot be made, or is not a
    private folder of this user."""
    candidates = _candidates()
    base = next(
        (
            c
            for c in candidates
            if len(os.fsencode(c)) + SOCKET_NAME_ROOM <= MAX_SOCKET_PATH and c.parent.is_dir()
        ),
        candidates[-1],
    )
    base.mkdir(mode=0o700, exist_ok=True)
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(
            f"the control folder {base} is not a private folder of this user"
            " (it must be a directory, owned by you, mode 0700)"
        )
    return base


def private_folders() -> list[Path]:
    """Every place :func:`private_folder` may be for this user (this environment's first),
    those that exist: a run started with another ``XDG_RUNTIME_DIR`` or ``TMPDIR`` has its
    sockets there."""
    return [p for p in _candidates() if os.path.lexists(p)]


def _candidates() -> list[Path]:
    found: list[Path] = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        found.append(Path(runtime) / "ralph")
    uid = os.getuid()
    found += [Path(tempfile.gettempdir()) / f"ralph-{uid}", Path(f"/run/user/{uid}/ralph")]
    found.append(Path(f"/tmp/ralph-{uid}"))
    return list(dict.fromkeys(found))


def proxy_folder() -> Path:
    """A new folder for one run's proxy socket: in :func:`private_folder`, mode 0700, a name
    nobody can guess (another process of the user cannot make it first, nor find it by name)."""
    return Path(tempfile.mkdtemp(prefix="proxy-", dir=private_folder()))


def cover_argv(keep: list[str] | None = None, also: Iterable[str] = ()) -> list[str]:
    """bubblewrap's arguments that lay the host's socket places over (see the module's text);
    ``keep``: paths bound back read-only when a covered folder holds them (default: the
    interpreter running this, which runs the bridge inside); ``also``: more such paths (the
    home: a home under ``/tmp``, as some CI machines have, stays the home)."""
    out: list[str] = []
    for folder in COVERED:
        if os.path.isdir(folder) and not os.path.islink(folder):
            out += ["--tmpfs", folder]
    for found in _sockets():
        out += ["--ro-bind", "/dev/null", found]
    return out + bind_back([*(keep if keep is not None else _interpreter()), *also])


def bind_back(paths: Iterable[str]) -> list[str]:
    """``--ro-bind`` of each of ``paths`` that a covered folder holds (and that exists): what
    the run must still see there (the bridge's interpreter; the home; the agent program the host
    resolved and the files its command line names, which a fresh ``/tmp`` would otherwise
    hide). A covered folder itself is never bound back."""
    out: list[str] = []
    for path in dict.fromkeys(paths):
        if any(_below(path, folder) for folder in COVERED) and os.path.exists(path):
            out += ["--ro-bind", path, path]
    return out


def _interpreter() -> list[str]:
    """What the bridge needs: the interpreter's prefixes, its executable's folder, and the
    folder holding ``ralph_lsp/`` (``bridge.py`` and ``relay.py`` are run by their paths; a
    checkout's own folder, site-packages for an install)."""
    paths = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))]
    # a virtual environment's own folder: under ``python -S`` (a detached runner) sys.prefix is
    # the base interpreter's, and the venv's bin/python (a link) would be nowhere inside
    venv = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        paths.append(venv)
    paths.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))
    return list(dict.fromkeys(os.path.realpath(p) for p in paths))


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _below(path: str, folder: str) -> bool:
    """Strictly inside ``folder``: a path that *is* a covered folder is never bound back."""
    return path.startswith(folder.rstrip("/") + "/")


def _sockets() -> Iterator[str]:
    """The sockets found under :data:`WALKED` (not in a covered folder), links not followed."""
    seen = 0
    for top in WALKED:
        for path, mode in _walk(top, WALK_DEPTH):
            seen += 1
            if seen > WALK_ENTRIES:
                return
            if stat.S_ISSOCK(mode) and not any(_under(path, c) for c in COVERED):
                yield path


def _walk(folder: str, depth: int) -> Iterator[tuple[str, int]]:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue
        yield entry.path, mode
        if stat.S_ISDIR(mode) and depth > 1 and not any(_under(entry.path, c) for c in COVERED):
            yield from _walk(entry.path, depth - 1)
