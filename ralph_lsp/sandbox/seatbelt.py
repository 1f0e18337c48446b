"""macOS: a Seatbelt profile (``sandbox-exec -p``) with the intent of the Linux sandbox.

Built from the same :class:`SandboxPolicy`: everything readable but the hidden paths, writes
only into the writable folders and never into the read-only ones inside them, and no network
but the loopback (the agent's proxy, when there is one, listens there). Built and unit-tested
as text; not tested on macOS (SPEC §10, docs/guide/sandbox.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ralph_lsp.sandbox.policy import SandboxPolicy

SANDBOX_EXEC = "/usr/bin/sandbox-exec"


def locate() -> str | None:
    return SANDBOX_EXEC if Path(SANDBOX_EXEC).is_file() else shutil.which("sandbox-exec")


def _quote(path: Path) -> str:
    text = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def profile(policy: SandboxPolicy, *, proxy_port: int | None = None) -> str:
    """The profile's text (SBPL). Later rules win in Seatbelt, so denials come last."""
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec)",
        "(allow process-fork)",
        "(allow signal (target same-sandbox))",
        "(allow sysctl-read)",
        "(allow mach-lookup)",
        "(allow ipc-posix-shm)",
        "(allow file-read*)",
        '(allow file-write* (literal "/dev/null") (literal "/dev/tty") (regex #"^/dev/fd/"))',
    ]
    for path in policy.writable:
        lines.append(f"(allow file-write* (subpath {_quote(path)}))")
    for path in policy.read_only:
        lines.append(f"(deny file-write* (subpath {_quote(path)}))")
    for path in policy.hidden:
        lines.append(f"(deny file-read* file-write* (subpath {_quote(path)}))")
    # No network namespace on macOS: the loopback is the host's own (a test server works,
    # and so would a listener of the host's: weaker than Linux, said in docs/guide/sandbox.md).
    lines.append('(allow network-bind network-inbound (local ip "localhost:*"))')
    port = "*" if proxy_port is None else str(proxy_port)
    lines.append(f'(allow network-outbound (remote ip "localhost:{port}") (remote unix-socket))')
    return "\n".join(lines) + "\n"


def argv(policy: SandboxPolicy, program: str, *, proxy_port: int | None = None) -> list[str]:
    """``sandbox-exec -p <profile>``, the command to follow."""
    return [program, "-p", profile(policy, proxy_port=proxy_port)]
