"""A run's control endpoint: a Unix domain socket only the same user can open (SPEC §9).

Where: a private folder, ``$XDG_RUNTIME_DIR/ralph`` when that is set, else ``<tmp>/ralph-<uid>``,
made with mode 0700 and refused when it is anybody else's or open to others
(:mod:`ralph_lsp.sandbox.sockets`: the egress proxies' folders are in it too, and no sandbox
sees it). The socket's name is
a short hash of the run (a socket path must fit in 108 bytes). Every peer is checked with
``SO_PEERCRED``: a process of another uid is closed on at once, whatever the folder's mode.

Protocol: newline-delimited JSON both ways.

- client → runner: ``{"type": "hello"}`` subscribes to the run's events;
  ``{"type": "stop", "id": …}``, ``{"type": "guide", "text": …, "id": …}`` act on the run.
- runner → client: after ``hello``: ``{"v", "type": "hello", "runId", "pid"}``, the current
  ``status`` event, the tail of the output (``log`` events, the last :data:`TAIL_LINES` lines),
  then every event live, up to ``end``. To a stop or guide: ``{"type": "reply", "id", "ok",
  "error"?, "status"?}`` (a stop replies once the agent's tree is gone).

Each subscriber has a bounded buffer (:data:`HIGH_WATER` bytes): past it the run is held back
(the engine waits before reading more of the agent's output; nothing is dropped). A subscriber
that does not read for :data:`STALL_SECONDS` is disconnected, so a hung editor never holds a run
for longer; it can attach again and gets the tail.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import socket
import stat
import struct
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from ralph_lsp.sandbox.sockets import private_folder

TAIL_LINES = 500
HIGH_WATER = 1024 * 1024


def _stall_seconds() -> float:
    """``RALPH_STALL_SECONDS`` (tests shorten it); 30 s by default."""
    try:
        value = float(os.environ.get("RALPH_STALL_SECONDS", "30"))
    except ValueError:
        return 30.0
    return value if 0 < value < 3600 else 30.0


STALL_SECONDS = _stall_seconds()
MAX_MESSAGE = 1024 * 1024  # one client message at most (a guidance text is far smaller)


class ControlError(Exception):
    """The control folder cannot be made private, or a socket cannot be reached."""


def control_dir() -> Path:
    """The private folder for control sockets, made if needed (mode 0700, ours): the sandbox's
    :func:`~ralph_lsp.sandbox.sockets.private_folder`, which every sandbox hides."""
    try:
        return private_folder()
    except PermissionError as exc:
        raise ControlError(str(exc)) from None
    except OSError as exc:
        raise ControlError(f"cannot make the control folder: {exc}") from None


def socket_path(root: Path, change: str, run_id: str) -> Path:
    digest = hashlib.sha256(f"{root}\0{change}\0{run_id}".encode()).hexdigest()[:20]
    return control_dir() / f"{digest}.sock"


async def listen(
    path: Path,
    serve: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> asyncio.AbstractServer:
    """The control socket at ``path`` (one left by an earlier host removed first), each client's
    lines read up to :data:`MAX_MESSAGE`."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    return await asyncio.start_unix_server(serve, path=str(path), limit=MAX_MESSAGE)


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end; None when unknown."""
    return peer_credentials(sock)[1]


# macOS (<sys/un.h>): SOL_LOCAL, LOCAL_PEERCRED (a struct xucred: version, then the uid),
# LOCAL_PEERPID. Python names none of them.
_SOL_LOCAL = 0
_LOCAL_PEERCRED = 0x001
_LOCAL_PEERPID = 0x002


def peer_credentials(sock: socket.socket) -> tuple[int | None, int | None]:
    """(pid, uid) of the process at the other end: Linux ``SO_PEERCRED``, macOS
    ``LOCAL_PEERPID`` and ``LOCAL_PEERCRED`` (what ``getpeereid`` reads); None where unknown."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is not None:
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
        except OSError:
            return None, None
        linux_pid, linux_uid, _gid = struct.unpack("3i", raw)
        return int(linux_pid), int(linux_uid)
    return _darwin_credentials(sock) if sys.platform == "darwin" else (None, None)


def _darwin_credentials(sock: socket.socket) -> tuple[int | None, int | None]:
    pid: int | None = None
    uid: int | None = None
    with contextlib.suppress(OSError, struct.error):
        pid = struct.unpack("i", sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID, 4))[0]
    with contextlib.suppress(OSError, struct.error):
        raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, 76)  # sizeof(struct xucred)
        uid = struct.unpack_from("Ii", raw)[1]
    return pid, uid


def check_socket(path: str) -> str:
    """A live file's socket, when it is a socket of this user directly in the private control
    folder (:func:`control_dir`); a live file from anywhere else (a cloned repository's
    ``.ralph/``) cannot send a client to another socket. Raises ControlError."""
    where = Path(path)
    if where.parent != control_dir() or not where.name.endswith(".sock"):
        raise ControlError(f"{path} is not in this user's control folder; not connected")
    try:
        st = os.lstat(where)
    except OSError as exc:
        raise ControlError(f"cannot reach {path}: {exc.strerror}") from None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        raise ControlError(f"{path} is not a socket of this user; not connected")
    return str(where)


def check_peer(sock: socket.socket | None, pid: int) -> None:
    """The process at the other end is this user's, and is ``pid`` (the live file's runner):
    a process that merely listens on the socket is never told anything. Raises ControlError."""
    if sock is None:
        raise ControlError("the runner's socket cannot be checked")
    peer_pid, uid = peer_credentials(sock)
    if uid is not None and uid != os.getuid():
        raise ControlError(f"the process at the runner's socket runs as uid {uid}, not you")
    if peer_pid is not None and peer_pid != pid:
        raise ControlError(
            f"the process at the runner's socket (pid {peer_pid}) is not the runner (pid {pid})"
        )


def same_user(sock: socket.socket | None) -> bool:
    """Whether the peer runs as this user (where the kernel cannot tell, the folder's mode
    is the guard)."""
    if sock is None:
        return False
    uid = peer_uid(sock)
    return uid is None or uid == os.getuid()
