"""The ``git`` program, run through argv (never a shell), for checkpoints and worktrees (SPEC §8).

Everything here leaves the user's repository as it was: commands that could write the user's
index (``status`` refreshing stat data, ``add``) run with ``GIT_OPTIONAL_LOCKS=0`` or with a
private ``GIT_INDEX_FILE``. The caller's environment never redirects git elsewhere
(``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_INDEX_FILE`` … are dropped).

A repository may be a stranger's (an untrusted clone), and its ``.git/config`` can name programs
that git runs by itself. Every git command of the product runs with all of them turned off
(:func:`git_command`): no hooks, no fsmonitor, no filter drivers (clean/smudge/process: each one
configured is emptied), no merge driver (each one configured merges as git's own text merge
does, through ``git merge-file``), no textconv or external diff (each ``diff.<driver>.command``
emptied too), no editor, no signature check, no pager, no credential helper or askpass, and
no transport at all (``GIT_ALLOW_PROTOCOL`` empty: a partial clone's lazy fetch of a
missing blob, which would run ``core.sshCommand``, is refused; ``GIT_NO_LAZY_FETCH`` too on
git >= 2.44). No LSP imports.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
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
    # Programs and configuration given through the environment: ours replace them.
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PROXY_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)
# Configuration that turns off every program git could run by itself (git help config: each
# key that names a program). Filters, merge and diff drivers are per driver: see _drivers_off.
SAFE_CONFIG = (
    "core.hooksPath=" + os.devnull,  # no hook (reference-transaction, post-index-change, …)
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.askPass=",
    "credential.helper=",  # an empty value clears the list of helpers
    "protocol.allow=never",  # also GIT_ALLOW_PROTOCOL below, which protocol.<x>.allow can't undo
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gc.auto=0",  # no automatic gc (and its pre-auto-gc hook)
    "maintenance.auto=false",
    "submodule.recurse=false",
    "advice.addEmbeddedRepo=false",
    "core.quotePath=false",
    "core.editor=:",  # ':' is git's own "no editor": nothing is started, the message is kept
    "sequence.editor=:",
    "log.showSignature=false",  # a signature check would run gpg.program
    "merge.verifySignatures=false",
)
# A repository-defined merge driver (``merge.<name>.driver``, chosen by .gitattributes) is a
# program of the repository's: each one configured is replaced by git's own three-way text
# merge, which is what git does for a driver that is not configured at all.
TEXT_MERGE = "git merge-file -L ours -L base -L theirs --marker-size=%L %A %O %B"
# The per-driver keys each configured driver gets, by section: the filters emptied (and no
# longer required), the merge driver made the text merge, the external diff command emptied
# (an empty one is refused by git: "cannot run", never a program).
_DRIVER_KEYS = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "merge": (("driver", TEXT_MERGE),),
    "diff": (("command", ""),),
}
SAFE_ENV = {
    "GIT_ALLOW_PROTOCOL": "",  # no protocol is allowed: nothing is ever fetched or pushed
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_NO_LAZY_FETCH": "1",  # git >= 2.44: a missing object is an error, never a fetch
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
}
# Commands that never read files of the work tree nor merge (so never run a filter, merge or diff
# driver); every other command gets each configured driver turned off first (one `git config`
# more).
_NO_FILTERS = frozenset(
    [
        "rev-parse",
        "config",
        "for-each-ref",
        "update-ref",
        "commit-tree",
        "diff-tree",
        "ls-tree",
        "cat-file",
        "symbolic-ref",
        "rev-list",
        "merge-base",  # the commit graph alone
    ]
)
# Porcelain that shows patches: never through textconv or an external diff program.
_PATCHING = frozenset({"diff", "log", "show"})
FALLBACK_NAME = "ralph-lsp"
FALLBACK_EMAIL = "ralph-lsp@localhost"
_WHERE = ("rev-parse", "--is-inside-work-tree", "--show-toplevel", "--git-dir", "--git-common-dir")
TIMEOUT = 600.0  # one git command; a hung git (a credential prompt, a lock) never hangs a run


class GitError(Exception):
    """A git command that failed; the message holds git's own words."""


def git_available() -> bool:
    return shutil.which("git") is not None


def base_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _REDIRECTS and not k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
    }
    env.update(SAFE_ENV)
    env.update(
        {
            "GIT_OPTIONAL_LOCKS": "0",  # `status`/`diff` never refresh the user's index
            "LC_ALL": "C",
        }
    )
    if extra:
        env.update(extra)
    return env


def _safe_argv(args: Sequence[str], extra_config: Sequence[str] = ()) -> list[str]:
    argv = ["git", "--no-pager"]
    for item in (*SAFE_CONFIG, *extra_config):
        argv += ["-c", item]
    words = list(args)
    at = next((i for i, w in enumerate(words) if not w.startswith("-")), None)
    if at is not None and words[at] in _PATCHING:
        words[at + 1 : at + 1] = ["--no-ext-diff", "--no-textconv"]
    return argv + words


# Within drivers_pinned(): each folder's lookup of its configured drivers, made once.
_PINNED: ContextVar[dict[Path, tuple[list[str], dict[str, str]]] | None] = ContextVar(
    "ralph_lsp_git_drivers", default=None
)


@contextmanager
def drivers_pinned() -> Iterator[None]:
    """Within the block (and the tasks and threads it starts), each folder's configured drivers
    are looked up once, not before every git command: for a host-side sequence of git commands
    during which only the product's own git commands run, and they write no driver. Whatever
    else runs within it (a verification) is followed by :func:`forget_drivers`."""
    token = _PINNED.set({})
    try:
        yield
    finally:
        _PINNED.reset(token)


def forget_drivers() -> None:
    """Drop what :func:`drivers_pinned` holds: something that could write git's configuration
    (a check of the run's code) has run, so the next command looks again."""
    memo = _PINNED.get()
    if memo is not None:
        memo.clear()


def _drivers(cwd: Path, env: dict[str, str]) -> list[str]:
    memo = _PINNED.get()
    if memo is None:
        return _drivers_off(cwd, env)
    hit = memo.get(cwd)
    if hit is None:
        probe = dict(env)
        items = _drivers_off(cwd, probe)
        hit = memo[cwd] = (items, {k: v for k, v in probe.items() if env.get(k) != v})
    env.update(hit[1])
    return list(hit[0])


def _drivers_off(cwd: Path, env: dict[str, str]) -> list[str]:
    """``-c`` items turning off every filter, merge and diff driver configured (any level,
    includes followed; see ``_DRIVER_KEYS``); a driver whose name holds '=' (``-c`` cannot name
    it) is set through ``env``."""
    proc = subprocess.run(
        [*_safe_argv(["config", "-z", "--name-only", "--get-regexp", r"^(filter|merge|diff)\."])],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    drivers = {
        (section.lower(), rest.rsplit(".", 1)[0])
        for key in proc.stdout.decode("utf-8", "surrogateescape").split("\0")
        if key.count(".") >= 2
        for section, rest in [key.split(".", 1)]
    }
    items: list[str] = []
    odd: list[tuple[str, str]] = []
    for section, name in sorted(drivers):
        for key, value in _DRIVER_KEYS.get(section, ()):
            if "=" in name:
                odd.append((f"{section}.{name}.{key}", value))
            else:
                items.append(f"{section}.{name}.{key}={value}")
    for i, (key, value) in enumerate(odd):  # git >= 2.31
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    if odd:
        env["GIT_CONFIG_COUNT"] = str(len(odd))
    return items


def git_command(
    cwd: Path, args: Sequence[str], env: Mapping[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of ``git args…`` in ``cwd`` with every program turned off."""
    full_env = base_env(env)
    sub = next((a for a in args if not a.startswith("-")), "")
    extra = [] if sub in _NO_FILTERS else _drivers(cwd, full_env)
    return _safe_argv(args, extra), full_env


def run_git(
    cwd: Path,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """``git -C cwd args…``; raises :class:`GitError` (with git's stderr) when it fails."""
    try:
        argv, full_env = git_command(cwd, args, env)
        proc = subprocess.run(
            argv,
            cwd=cwd,
            env=full_env,
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


def read_capped(cwd: Path, args: Sequence[str], cap: int) -> tuple[bytes, bool]:
    """At most ``cap`` bytes of a git command's standard output, and whether there was more;
    git is stopped (killed) once the cap is read, so memory never grows with its output."""
    argv, env = git_command(cwd, args)
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err
            )
        except OSError as exc:
            raise GitError(f"git {args[0] if args else ''} could not run: {exc}") from exc
        assert proc.stdout is not None
        chunks: list[bytes] = []
        size = 0
        with proc, proc.stdout:
            while size <= cap and (chunk := os.read(proc.stdout.fileno(), 1 << 20)):
                chunks.append(chunk)
                size += len(chunk)
            more = size > cap
            if more:
                proc.kill()  # the rest is not wanted: git stops now
            code = proc.wait(TIMEOUT)
        if code != 0 and not more:
            err.seek(0)
            words = err.read(4096).decode("utf-8", "replace").strip() or f"exit {code}"
            raise GitError(f"git {' '.join(args[:2])}: {words.splitlines()[-1]}")
    return b"".join(chunks)[:cap], more


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
