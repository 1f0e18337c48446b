"""The ``git`` program, run through argv (never a shell), for checkpoints and worktrees (SPEC §8).

Everything here leaves the user's repository as it was: commands that could write the user's
index (``status`` refreshing stat data, ``add``) run with ``GIT_OPTIONAL_LOCKS=0`` or with a
private ``GIT_INDEX_FILE``. The caller's environment never redirects git elsewhere
(``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_INDEX_FILE`` … are dropped). No LSP imports.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Variables that would point git at another repository, index or object store than the one
# asked about: a checkpoint must never follow them.
_REDIRECTS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_PREFIX",
)
FALLBACK_NAME = "ralph-lsp"
FALLBACK_EMAIL = "ralph-lsp@localhost"
_WHERE = ("rev-parse", "--is-inside-work-tree", "--show-toplevel", "--git-dir", "--git-common-dir")
TIMEOUT = 600.0  # one git command; a hung git (a credential prompt, a lock) never hangs a run


class GitError(Exception):
    """A git command that failed; the message holds git's own words."""


def git_available() -> bool:
    return shutil.which("git") is not None


def base_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REDIRECTS}
    env.update(
        {
            "GIT_OPTIONAL_LOCKS": "0",  # `status`/`diff` never refresh the user's index
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
        }
    )
    if extra:
        env.update(extra)
    return env


def run_git(
    cwd: Path,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """``git -C cwd args…``; raises :class:`GitError` (with git's stderr) when it fails."""
    argv = ["git", "-c", "advice.addEmbeddedRepo=false", "-c", "core.quotePath=false", *args]
    try:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=base_env(env),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed (no `git` on PATH)") from exc
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0] if args else ''} could not run: {exc}") from exc
    if check and proc.returncode != 0:
        words = proc.stderr.decode("utf-8", "replace").strip() or f"exit {proc.returncode}"
        raise GitError(f"git {' '.join(args[:2])}: {words.splitlines()[-1]}")
    return proc


def out(cwd: Path, args: Sequence[str], **kw: object) -> str:
    """A git command's standard output, decoded, without the final newline."""
    proc = run_git(cwd, args, **kw)  # type: ignore[arg-type]
    return proc.stdout.decode("utf-8", "replace").rstrip("\n")


@dataclass(frozen=True)
class Repo:
    """A git work tree: its top folder, its own git dir and the common (shared) git dir."""

    top: Path
    git_dir: Path
    common_dir: Path

    def git(self, *args: str, **kw: object) -> str:
        return out(self.top, args, **kw)

    def run(self, *args: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
        return run_git(self.top, args, **kw)  # type: ignore[arg-type]

    def rev(self, name: str) -> str | None:
        """The commit ``name`` names, or None."""
        proc = self.run("rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", check=False)
        text = proc.stdout.decode("ascii", "replace").strip()
        return text if proc.returncode == 0 and text else None


def find_repo(path: Path) -> Repo | None:
    """The git work tree ``path`` is in, or None (not in one, a bare repository, no git)."""
    if not git_available():
        return None
    try:
        proc = run_git(
            path,
            [*_WHERE],
            check=False,
        )
    except GitError:
        return None
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if proc.returncode != 0 or len(lines) < 4 or lines[0] != "true":
        return None
    top = Path(lines[1])
    git_dir = (path / lines[2]).resolve()
    common = (path / lines[3]).resolve()
    return Repo(top=top, git_dir=git_dir, common_dir=common)


def identity_env(repo: Repo) -> dict[str, str]:
    """The user's git identity when one is set, else ``ralph-lsp <ralph-lsp@localhost>``."""
    env: dict[str, str] = {}
    for key, conf, fallback in (
        ("NAME", "user.name", FALLBACK_NAME),
        ("EMAIL", "user.email", FALLBACK_EMAIL),
    ):
        roles = [r for r in ("AUTHOR", "COMMITTER") if not os.environ.get(f"GIT_{r}_{key}")]
        if not roles:
            continue
        value = repo.run("config", "--get", conf, check=False).stdout.decode().strip()
        if not value:
            env.update({f"GIT_{role}_{key}": fallback for role in roles})
    return env
