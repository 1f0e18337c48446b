#!/usr/bin/env python3
"""A hostile agent that redirects git: it makes a common directory of its own whose config
names a command as ``core.fsmonitor`` (one that leaves CANARY), and points git at it.

    redirect_git.py CANARY [replace | include]

In an ordinary repository it writes ``.git/commondir`` (with ``replace``: it moves ``.git``
aside and makes one of its own in its place; with ``include``: it writes the
``shared.gitconfig`` the repository's config includes); in a root below the repository's top
it makes a ``.git`` of its own there; in a linked worktree (the run's own,
in worktree mode) it rewrites that worktree's ``commondir`` and ``gitdir`` and locks it with
``locked`` (so that it is kept when the run ends), and writes a ``config.worktree``. Each
attempt is reported as ``REDIRECT <name>: DONE`` or ``FAILED …``. It then checks every task
of the tasks file its prompt names, so the run ends as a success. Standard library only.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

canary = sys.argv[1]
root = Path.cwd()
dot = root / ".git"
CONFIG = (
    f'[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch {canary}; :"\n'
)


def attempt(name: str, action) -> None:  # type: ignore[no-untyped-def]
    try:
        action()
        print(f"REDIRECT {name}: DONE", flush=True)
    except Exception as exc:
        print(f"REDIRECT {name}: FAILED {type(exc).__name__}: {exc}", flush=True)


def evil_common(gitdir: Path, common: Path) -> Path:
    """A common directory beside ``gitdir`` with the agent's config and the real objects."""
    evil = gitdir / "evil-common"
    evil.mkdir(exist_ok=True)
    (evil / "config").write_text(CONFIG)
    for name in ("objects", "refs"):
        if not (evil / name).exists():
            os.symlink(common / name, evil / name)
    return evil


def replace_git() -> None:
    """The repository's .git moved aside and one of the agent's own put in its place."""
    dot.rename(root / ".git-moved")
    subprocess.run(["git", "init", "-q"], check=True)
    (dot / "config").write_text(CONFIG)


if sys.argv[2:] == ["include"]:  # the file the user's config includes from the work tree
    attempt("write shared.gitconfig", lambda: (root / "shared.gitconfig").write_text(CONFIG))
elif dot.is_dir() and sys.argv[2:] == ["replace"]:
    attempt("replace .git", replace_git)
elif dot.is_dir():
    attempt("make the common dir", lambda: evil_common(dot, dot))
    attempt("write .git/commondir", lambda: (dot / "commondir").write_text("evil-common\n"))
elif not dot.exists():  # a root below the repository's top: a repository of its own here
    attempt("git init", lambda: subprocess.run(["git", "init", "-q"], check=True))
    attempt("write its config", lambda: (dot / "config").write_text(CONFIG))
else:
    gitdir = Path(dot.read_text().split(":", 1)[1].strip())
    common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
    attempt("make the common dir", lambda: evil_common(gitdir, common))
    attempt("write commondir", lambda: (gitdir / "commondir").write_text("evil-common\n"))
    attempt("write gitdir", lambda: (gitdir / "gitdir").write_text(f"{root}/elsewhere/.git\n"))
    attempt("write locked", lambda: (gitdir / "locked").write_text("keep me\n"))
    attempt("write config.worktree", lambda: (gitdir / "config.worktree").write_text(CONFIG))

for line in sys.stdin.read().splitlines():
    if line.startswith("Tasks file: "):
        tasks = Path(line[len("Tasks file: ") :])
        tasks.write_text(tasks.read_text().replace("- [ ]", "- [x]"), encoding="utf-8")
