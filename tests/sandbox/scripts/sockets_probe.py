#!/usr/bin/env python3
"""A sandboxed agent or verification command looking for the host's sockets and secrets.

    sockets_probe.py agent|verify

Reads ``probe-targets.json`` in its working folder (the work tree): ``sockets`` (paths the test
knows: another run's control and proxy sockets, sockets the test made), ``origin``
(``host:port`` of the test's server, allowed by the other run's proxy) and ``canaries`` (files
that must be unreadable). Writes ``probe-<mode>.json``:

- ``targets``: each named socket tried (a control socket told ``guide`` and ``stop``, a proxy
  asked to ``CONNECT`` to the origin): ``DONE …`` or ``FAILED …``;
- ``found``: every socket a walk of the places sockets live finds, each tried the same way;
- ``proxy_env``: the proxy variables set; ``canaries``: each read; ``network``: a direct try.

As an agent it then checks every task of the tasks file its prompt names. Standard library only.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
from pathlib import Path

mode = sys.argv[1]
wanted = json.loads(Path("probe-targets.json").read_text(encoding="utf-8"))
WALKED = ["/tmp", "/run", "/var/tmp", "/dev/shm", os.environ.get("HOME") or "/"]
LIMIT = 20000


def tell(path: str) -> str:
    """Connect to ``path`` and say what a control socket or a proxy would act on."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(path)
        if path.endswith("proxy.sock"):
            s.sendall(f"CONNECT {wanted['origin']} HTTP/1.1\r\n\r\n".encode())
        else:
            guide = {"type": "guide", "text": "PROBE-GUIDANCE", "id": 1}
            s.sendall((json.dumps(guide) + "\n" + '{"type": "stop", "id": 2}\n').encode())
        return s.recv(200).decode(errors="replace") or "connected, no answer"


def attempt(action, *args) -> str:
    try:
        result = f"DONE {action(*args)!r}"
    except Exception as exc:
        result = f"FAILED {type(exc).__name__}: {exc}"
    return result[:300]


def sockets_in_view() -> list[str]:
    found, seen = [], 0
    for top in WALKED:
        for folder, dirs, files in os.walk(top):
            for name in files + dirs:
                seen += 1
                path = os.path.join(folder, name)
                try:
                    if stat.S_ISSOCK(os.lstat(path).st_mode):
                        found.append(path)
                except OSError:
                    pass
            if seen > LIMIT:
                break
    return sorted(set(found))


def direct() -> str:
    with socket.create_connection(("exfiltrate.example.com", 80), timeout=3):
        return "connected to exfiltrate.example.com:80"


found = sockets_in_view()
report = {
    "targets": {p: attempt(tell, p) for p in wanted["sockets"]},
    "found": {p: attempt(tell, p) for p in found},
    "proxy_env": {k: v for k, v in os.environ.items() if "proxy" in k.lower()},
    "canaries": {p: attempt(lambda p: Path(p).read_text(), p) for p in wanted["canaries"]},
    "network": attempt(direct),
}
for section in ("targets", "found", "canaries"):
    for name, result in report[section].items():
        print(f"PROBE {section} {name}: {result}", flush=True)
print(f"PROBE network: {report['network']}", flush=True)
Path(f"probe-{mode}.json").write_text(json.dumps(report, indent=1), encoding="utf-8")

if mode == "agent":
    for line in sys.stdin.read().splitlines():
        if line.startswith("Tasks file: "):
            tasks = Path(line[len("Tasks file: ") :])
            tasks.write_text(tasks.read_text().replace("- [ ]", "- [x]"), encoding="utf-8")
