"""A fake agent for the fault matrix (tests/faults): ``fault_agent.py MODE [ARG]``.

It reads the prompt (``-p PROMPT``, ``--prompt-file PATH`` or stdin), finds the ``Tasks file:``
line, records itself, then behaves as MODE says. ``MODE`` ``directive`` reads the mode from a
``<!-- fault: MODE [ARG] -->`` line of tasks.md instead (so one agent command can behave per
change), defaulting to ``check``.

Modes (``check`` = check the first unchecked task, atomically, as a real agent's edit would):

- ``check`` [CODE]: check one task, exit CODE (default 0);
- ``check-every``: check every unchecked task (one atomic save each), then exit 0;
- ``check-pause`` SECONDS: print a line, sleep SECONDS, check one task, print another line
  (a run whose moments a seeded kill can land on: tests/faults/crash_trials.py);
- ``check-signal`` N: check one task, then kill itself with signal N;
- ``limited-once`` STDOUT: on its first spawn (per ``$FAULT_LOG_DIR``) write the recorded
  STDOUT (a rate-limited Claude run) and exit 1; later spawns check one task;
- ``archive`` [all]: check one task (every task with ``all``), then move the change folder to
  ``openspec/changes/archive/2026-01-02-<name>/`` as ``openspec archive`` does;
- ``check-all-linger``: check every task, print nothing more, sleep forever;
- ``check-silent-hang``: check one task, print nothing, sleep forever;
- ``stderr-check`` TEXT: print TEXT on stderr (as a failing test would), check one task;
- ``signal`` N: kill itself with signal N at once, checking nothing;
- ``hang``: check nothing, print nothing, sleep forever;
- ``stubborn``: ignore SIGTERM, fork a child and a ``setsid`` grandchild that ignore it too,
  print ``ready`` once all three are recorded, sleep forever;
- ``hopper``: leave a process that hops without end: it forks, the child starts a session of
  its own and the parent exits, every few milliseconds, so its pid never stays the same
  (SIGTERM ignored throughout); the agent prints ``ready`` and sleeps forever;
- ``flood`` KIND: flood stdout (``lines`` 100k lines, ``long`` one 10 MB line, ``binary`` random
  bytes and invalid UTF-8, ``ansi`` escape sequences), then check one task;
- ``flood-until``: flood lines until the file ``$FAULT_RELEASE`` exists (at most 60 s), then
  check one task;
- ``replay`` STDOUT STDERR RC: write the two recorded files to stdout and stderr, exit with the
  number in the file RC (or RC itself when it is a number);
- ``check-after-release``: wait until the file ``$FAULT_RELEASE`` exists (at most 60 s), then
  check one task;
- ``env``: write ``os.environ`` as JSON to ``$FAULT_LOG_DIR/env-<pid>.json``, check one task;
- ``break-history``: replace ``.ralph/`` of its working folder (the OpenSpec root) with a regular
  file, then check one task;
- ``delete-tasks`` / ``empty-tasks`` / ``tasks-to-dir`` / ``tasks-symlink-loop`` /
  ``remove-change``: damage tasks.md or the change folder, exit 0.

Records, when ``$FAULT_LOG_DIR`` is set: one JSON line per spawn in ``spawns.jsonl`` (pid, argv,
prompt) and every pid it (or its offspring) had in ``pids.txt``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import time
from pathlib import Path

LOG_DIR = os.environ.get("FAULT_LOG_DIR")


def read_prompt() -> str:
    args = sys.argv[1:]
    if "-p" in args:
        prompt = args[args.index("-p") + 1]
        # A prompt too long for a command line comes as a pointer to its file: read it.
        m = re.match(r"Your instructions for this session are in the file (.+?) \(too long", prompt)
        return Path(m.group(1)).read_text(encoding="utf-8") if m else prompt
    if "--prompt-file" in args:
        return Path(args[args.index("--prompt-file") + 1]).read_text(encoding="utf-8")
    return sys.stdin.read()


def record_pid() -> None:
    if LOG_DIR:
        with open(os.path.join(LOG_DIR, "pids.txt"), "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")


def record_spawn(prompt: str) -> None:
    if LOG_DIR:
        entry = {"pid": os.getpid(), "argv": sys.argv, "prompt": prompt}
        with open(os.path.join(LOG_DIR, "spawns.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
    record_pid()


def tasks_path(prompt: str) -> Path:
    for line in prompt.splitlines():
        if line.startswith("Tasks file: "):
            return Path(line[len("Tasks file: ") :])
    raise SystemExit("fault agent: no 'Tasks file:' line in the prompt")


def check_one(path: Path) -> bool:
    data = path.read_bytes()
    new, n = re.subn(rb"^(\s*[-*+] )\[ \]", rb"\1[x]", data, count=1, flags=re.M)
    if n:
        tmp = path.with_name(".tasks.md.fault-tmp")
        tmp.write_bytes(new)
        os.replace(tmp, path)
    print("checked one task" if n else "nothing left to check", flush=True)
    return bool(n)


def sleep_forever() -> None:
    while True:
        time.sleep(3600)


def stubborn() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pids = os.path.join(LOG_DIR or ".", "pids.txt")
    if os.fork() == 0:  # the child
        record_pid()
        if os.fork() == 0:  # the grandchild escapes into a session of its own
            os.setsid()
            record_pid()
        sleep_forever()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(pids) as f:
            if len(f.read().split()) >= 3:
                break
        time.sleep(0.01)
    print("ready", flush=True)
    sleep_forever()


def flood(kind: str) -> None:
    out = sys.stdout.buffer
    if kind == "lines":
        out.write(b"".join(b"flood line %d of 100000\n" % i for i in range(100_000)))
    elif kind == "long":
        out.write(b"x" * (10 * 1024 * 1024) + b"\nafter the long line\n")
    elif kind == "binary":
        out.write(
            os.urandom(256 * 1024) + b"\n\xff\xfe\xc3\x28\x00bad\x80\n\xe2\x82\n\xed\xa0\x80\n"
        )
        out.write(b"after the binary\n")
    elif kind == "ansi":
        for i in range(2000):
            out.write(b"\x1b[31mred %d\x1b[0m\x1b[2K\x1b[1A\r\x1b]0;title\x07\x1b[?1049h ok\n" % i)
        out.write(b"\x1bc\x1b[2J\x1b[H after the escapes\n")
    else:
        raise SystemExit(f"fault agent: unknown flood kind {kind!r}")
    out.flush()


def flood_until() -> None:
    release = os.environ["FAULT_RELEASE"]
    out = sys.stdout.buffer
    block = b"".join(b"flooding line %d\n" % i for i in range(2000))
    deadline = time.monotonic() + 60
    while not os.path.exists(release) and time.monotonic() < deadline:
        out.write(block)
    out.flush()


def replay(stdout: str, stderr: str, rc: str) -> int:
    sys.stdout.buffer.write(Path(stdout).read_bytes())
    sys.stdout.flush()
    sys.stderr.buffer.write(Path(stderr).read_bytes())
    sys.stderr.flush()
    code = rc if rc.isdigit() else re.sub(r"\D", "", Path(rc).read_text())
    return int(code)


def directive(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ["check"]
    m = re.search(r"<!-- fault: ([^>]*?) -->", text)
    return m.group(1).split() if m else ["check"]


def hopper() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pause = float(os.environ.get("FAULT_HOP_SECONDS", "0.005"))
    if os.fork() == 0:
        while True:
            os.setsid()
            if os.fork() != 0:
                os._exit(0)  # the parent goes; the child hops on under a new pid
            time.sleep(pause)
    print("ready", flush=True)
    sleep_forever()


def main() -> int:
    prompt = read_prompt()
    record_spawn(prompt)
    path = tasks_path(prompt)
    words = sys.argv[1:]
    for flag in ("-p", "--prompt-file"):
        if flag in words:
            i = words.index(flag)
            del words[i : i + 2]
    if words[:1] == ["directive"]:
        words = directive(path)
    mode, arg = words[0], (words[1] if len(words) > 1 else None)

    if mode == "check":
        check_one(path)
        return int(arg or 0)
    if mode == "check-every":
        while check_one(path):
            pass
        return 0
    if mode == "check-pause":
        print("thinking", flush=True)
        time.sleep(float(arg or 0.1))
        check_one(path)
        return 0
    if mode == "limited-once":
        first = os.path.join(LOG_DIR or ".", "limited-once.done")
        if not os.path.exists(first):
            open(first, "w").close()
            sys.stdout.write(Path(arg or "").read_text(encoding="utf-8"))
            return 1
        check_one(path)
        return 0
    if mode == "archive":
        while check_one(path) and arg == "all":
            pass
        folder = path.parent
        archive = folder.parent / "archive"
        archive.mkdir(exist_ok=True)
        os.rename(folder, archive / f"2026-01-02-{folder.name}")
        return 0
    if mode == "check-all-linger":
        while check_one(path):
            pass
        sleep_forever()
    if mode == "check-silent-hang":
        data = path.read_bytes()
        new = re.sub(rb"^(\s*[-*+] )\[ \]", rb"\1[x]", data, count=1, flags=re.M)
        tmp = path.with_name(".tasks.md.fault-tmp")
        tmp.write_bytes(new)
        os.replace(tmp, path)
        sleep_forever()
    if mode == "stderr-check":
        print(arg, file=sys.stderr, flush=True)
        check_one(path)
        return 0
    if mode == "check-signal":
        check_one(path)
        os.kill(os.getpid(), int(arg or 9))
    if mode == "signal":
        os.kill(os.getpid(), int(arg or 9))
    if mode == "hang":
        sleep_forever()
    if mode == "stubborn":
        stubborn()
    if mode == "hopper":
        hopper()
    if mode == "flood":
        flood(arg or "lines")
        check_one(path)
        return 0
    if mode == "check-after-release":
        release = os.environ["FAULT_RELEASE"]
        deadline = time.monotonic() + 60
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.01)
        check_one(path)
        return 0
    if mode == "flood-until":
        flood_until()
        check_one(path)
        return 0
    if mode == "break-history":
        shutil.rmtree(".ralph", ignore_errors=True)
        Path(".ralph").write_text("not a folder\n")
        check_one(path)
        return 0
    if mode == "replay":
        return replay(words[1], words[2], words[3])
    if mode == "env":
        with open(os.path.join(LOG_DIR or ".", f"env-{os.getpid()}.json"), "w") as f:
            json.dump(dict(os.environ), f)
        check_one(path)
        return 0
    if mode == "delete-tasks":
        path.unlink()
    elif mode == "empty-tasks":
        path.write_bytes(b"")
    elif mode == "tasks-to-dir":
        path.unlink()
        path.mkdir()
    elif mode == "tasks-symlink-loop":
        path.unlink()
        path.symlink_to(path.name)
    elif mode == "remove-change":
        shutil.rmtree(path.parent)
    else:
        raise SystemExit(f"fault agent: unknown mode {mode!r}")
    print(f"did {mode}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
