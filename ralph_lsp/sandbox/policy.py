"""What a run's sandbox grants (SPEC §10), decided from plain paths, before any mechanism.

:func:`build_policy` gives a :class:`SandboxPolicy`: the folders a run may write (its work
tree, a private temporary folder, per-run package caches, the agent CLI's own state folder,
``ralph.sandbox.allowWrite``, and what ``git commit`` needs of a git directory outside the work
tree), the paths it may not even read (secrets in the home: credentials, shell histories, editor
state, the other agent CLIs' state; other users' homes, ``ralph.sandbox.denyRead``), and the
paths inside a writable folder that are put back read-only (``.git/hooks``, ``.git/config``,
every ``config.worktree``, ``.git/info``, ``.ralph/``, and every file that says where the
repository is: :func:`git_pointers`). The mechanisms (``bwrap.py``,
``seatbelt.py``) only translate it. Reads files, never writes any.
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Secrets in a home folder, hidden from every process of a run (files and folders alike).
SECRET_PATHS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".npmrc",
    ".pypirc",
    # browsers and keyrings
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".local/share/keyrings",
    ".password-store",
    ".pki",
    # X11 and ICE session cookies
    ".Xauthority",
    ".ICEauthority",
    # other coding tools' logins (the agent CLIs' state folders: OTHER_AGENT_STATE)
    ".config/github-copilot",
    ".cursor",
    # shell and REPL histories: every command typed, passwords and tokens among them
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".histfile",
    ".sh_history",
    ".local/share/fish",
    ".python_history",
    ".ipython",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".rediscli_history",
    ".irb_history",
    ".lesshst",
    ".viminfo",
    ".local/state/nvim",
    # editors' state (settings, secrets storage, history), never their extensions: a server
    # bundled with an extension runs from ~/.vscode(-server)/extensions and must stay readable
    ".config/Code",
    ".config/Code - OSS",
    ".config/Code - Insiders",
    ".config/VSCodium",
    ".config/Cursor",
    ".config/Windsurf",
    ".config/code-server",
    ".local/share/code-server/User",
    ".local/share/code-server/Machine",
    ".local/share/code-server/coder.json",
    ".vscode-server/data",
    ".vscode-server-insiders/data",
    ".cursor-server/data",
    ".config/JetBrains",
    ".local/share/JetBrains",
    ".config/zed",
    ".local/share/zed",
    ".config/sublime-text",
)

# The one agent CLI state folder a preset may write (the environment variable that moves it).
AGENT_STATE = {
    "claude": ("CLAUDE_CONFIG_DIR", ".claude"),
    "codex": ("CODEX_HOME", ".codex"),
    "gemini": ("GEMINI_CLI_HOME", ".gemini"),
}

# Read-only folders made when missing, so that the run cannot make them its own.
MADE_READ_ONLY = ("hooks", "info", ".ralph")

# Package caches, each pointed into the run's own cache folder.
CACHE_VARIABLES = {
    "PIP_CACHE_DIR": "pip",
    "npm_config_cache": "npm",
    "UV_CACHE_DIR": "uv",
    "XDG_CACHE_HOME": "xdg",
}


@dataclass(frozen=True)
class SandboxPolicy:
    """Paths a run may write, may not read, and may read but not write; what it may reach."""

    work_root: Path
    tmp_dir: Path  # the run's private temporary folder (TMPDIR inside)
    writable: tuple[Path, ...]
    hidden: tuple[Path, ...]
    read_only: tuple[Path, ...]  # inside a writable folder, put back read-only
    # bound read-only before the writable folders: the work tree of a reviewer (SPEC §13) or a
    # planning run (§14), seen inside even under a fresh /tmp, and written only where its
    # writable folders (the task files' folders, the change folder) are bound on top of it
    read_only_first: tuple[Path, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)  # set for every process inside
    allowed_domains: tuple[str, ...] = ()  # the agent's egress allowlist (the proxy's)


def build_policy(
    work_root: Path,
    tmp_dir: Path,
    *,
    home: Path | None,
    preset: str,
    env: Mapping[str, str],
    allow_write: Sequence[str] = (),
    deny_read: Sequence[str] = (),
    allowed_domains: Sequence[str] = (),
    history_root: Path | None = None,
    confine_to: Path | None = None,
) -> SandboxPolicy:
    """The policy of one run whose agent works in ``work_root`` (``history_root``: where its
    ``.ralph/`` lives, when that is not the work tree). ``confine_to`` (a planning run's change
    folder, SPEC §14): the one folder of the work tree it writes, the rest read-only, git's
    directory and ``ralph.sandbox.allowWrite`` too."""
    work_root = Path(os.path.realpath(work_root))
    caches = tmp_dir / "cache"
    git_write, git_read_only = git_paths(work_root)
    if confine_to is not None:
        writable = [Path(os.path.realpath(confine_to)), tmp_dir]
        writable += agent_state(preset, env, home)
    else:
        writable = [work_root, tmp_dir, *git_write]
        writable += agent_state(preset, env, home)
        writable += [_expand(p, home) for p in allow_write]
    hidden = secrets_of(home) + other_homes(home) + other_agents_state(preset, env, home)
    # a home kept visible because the work tree is in it keeps its secrets hidden
    hidden += [s for h in other_homes(home) if _inside(work_root, h) for s in secrets_of(h)]
    hidden += [_expand(p, home) for p in deny_read]
    read_only = git_read_only
    for root in dict.fromkeys([work_root, *([history_root] if history_root else [])]):
        read_only.append(Path(os.path.realpath(root)) / ".ralph")
    run_env = {name: str(caches / sub) for name, sub in CACHE_VARIABLES.items()}
    run_env["TMPDIR"] = str(tmp_dir)
    return SandboxPolicy(
        work_root=work_root,
        tmp_dir=tmp_dir,
        writable=_unique(writable),
        hidden=_hideable(hidden, writable),
        # what exists, and the folders made before they are bound (session.py)
        read_only=_unique(p for p in read_only if _exists(p) or p.name in MADE_READ_ONLY),
        env=run_env,
        allowed_domains=tuple(dict.fromkeys(allowed_domains)),
        read_only_first=(work_root,) if confine_to is not None else (),
    )


def secrets_of(home: Path | None) -> list[Path]:
    return [] if home is None else [home / p for p in SECRET_PATHS]


def other_homes(home: Path | None) -> list[Path]:
    """Every home folder under /home that is not ours, and /root when it is not ours (ours:
    ``home``, and the account's own home when ``HOME`` names another folder)."""
    found: list[Path] = []
    ours = [Path(os.path.realpath(h)) for h in (home, _account_home()) if h is not None]
    try:
        entries = sorted(Path("/home").iterdir())
    except OSError:
        entries = []
    for entry in [*entries, Path("/root")]:
        real = Path(os.path.realpath(entry))
        if any(mine == real or mine.is_relative_to(real) for mine in ours):
            continue
        if entry.is_dir():
            found.append(entry)
    return found


def agent_state(preset: str, env: Mapping[str, str], home: Path | None) -> list[Path]:
    """The preset's own state folder (and Claude's ``~/.claude.json``): only that one."""
    if preset not in AGENT_STATE:
        return []
    variable, default = AGENT_STATE[preset]
    out: list[Path] = []
    if env.get(variable):
        out.append(Path(env[variable]).expanduser())
    elif home is not None:
        out.append(home / default)
    if preset == "claude" and home is not None and not env.get(variable):
        out.append(home / ".claude.json")
    return out


def other_agents_state(preset: str, env: Mapping[str, str], home: Path | None) -> list[Path]:
    """Every other preset's state folder, where its variable puts it and where it is by
    default (and Claude's ``~/.claude.json``): their logins (``~/.codex/auth.json``,
    ``~/.gemini/oauth_creds.json``, ``~/.claude/.credentials.json``) and transcripts. The
    run's own preset keeps its folder (:func:`agent_state`), which it must write."""
    own = agent_state(preset, env, home)
    out: list[Path] = []
    for name, (variable, default) in AGENT_STATE.items():
        if name == preset:
            continue
        if env.get(variable):
            out.append(Path(env[variable]).expanduser())
        if home is not None:
            out += [home / default] + ([home / ".claude.json"] if name == "claude" else [])
    return [p for p in out if p not in own]


def git_dirs(work_root: Path) -> tuple[Path, Path] | None:
    """The git directory of the work tree holding ``work_root`` and its common directory
    (the same, but for a linked worktree), read from the files alone."""
    for folder in (work_root, *work_root.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot, dot
        if dot.is_file():
            try:
                text = dot.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            gitdir = Path(os.path.realpath(folder / text.removeprefix("gitdir:").strip()))
            common = gitdir
            try:
                pointer = (gitdir / "commondir").read_text(encoding="utf-8").strip()
                common = Path(os.path.realpath(gitdir / pointer))
            except OSError:
                pass
            return gitdir, common
    return None


def git_paths(work_root: Path) -> tuple[list[Path], list[Path]]:
    """(writable, read-only) paths of the repository holding ``work_root``.

    The git directory is bound onto itself, writable: ``git commit`` inside writes there, and a
    mount point cannot be renamed or replaced, so the run cannot put a ``.git`` of its own in
    its place (nor an ``objects`` folder: :func:`pinned`). The other worktrees' folders
    (``worktrees/``, when the run's git directory is not one of them) are read-only whole. A
    git directory outside the work tree (a linked worktree's, or a root below the repository's
    top) gets what ``git commit`` writes: its own folder, and the common directory's objects,
    refs and logs. Everything git would run or obey later stays read-only: hooks, config,
    every ``config.worktree``, info (attributes, exclude), and every file that says where a
    repository is (:func:`git_pointers`)."""
    found = git_dirs(work_root)
    if found is None:
        return [], []
    gitdir, common = found
    writable = [gitdir, *pinned(work_root, common)]
    for path in (common / "objects", common / "refs", common / "logs"):
        if not _inside(path, work_root):
            writable.append(path)
    read_only = [common / "hooks", common / "config", common / "info", common / "config.worktree"]
    read_only += [gitdir / "config.worktree"]
    worktrees = common / "worktrees"
    if not _inside(gitdir, worktrees) and _is_folder(worktrees):
        read_only.append(worktrees)  # the other worktrees' folders, whole: one bind for all
    # (the git directory itself is no pointer: a work tree's own .git folder stays writable)
    read_only += [
        p
        for p in git_pointers(work_root)
        if not _is_folder(p) and (p.parent.parent != worktrees or p.parent == gitdir)
    ]
    modules = common / "modules"
    if modules.is_dir():
        read_only.append(modules)
    return writable, list(_unique(read_only))


def pinned(work_root: Path, common: Path) -> list[Path]:
    """The folders of a git directory inside the work tree that hold a pointer (``objects``
    and ``objects/info``): bound onto themselves, so that a run cannot move one away and put
    a folder of its own, with other pointers, in its place."""
    out = [common / "objects", common / "objects" / "info"]
    return [p for p in out if _inside(p, work_root) and _is_folder(p)]


# Files in a git directory that say where a repository, its config or its objects are: each one
# written by a run would redirect the host's next git command (SPEC §10).
POINTERS = ("commondir", "gitdir", "config.worktree", "locked")


def git_pointers(work_root: Path) -> list[Path]:
    """Every file that tells git where the repository of ``work_root`` is, or what its config
    and objects are, whether it exists or not: the work tree's ``.git`` (a linked worktree's
    gitfile, or one a run would make in a root below the repository's top), ``commondir`` and
    ``config.worktree`` of the git and common directories, ``objects/info/alternates``, and
    ``commondir``, ``gitdir``, ``config.worktree`` and ``locked`` (which keeps a worktree from
    being removed) of every linked worktree's folder, the ``.git`` file of each one in the work
    tree, and the files the config includes where a run could write them. ``[]`` outside a
    repository."""
    found = git_dirs(work_root)
    if found is None:
        return []
    gitdir, common = found
    out = [work_root / ".git"]
    for folder in dict.fromkeys([gitdir, common]):
        out += [folder / "commondir", folder / "config.worktree"]
    out.append(common / "objects" / "info" / "alternates")
    worktrees = common / "worktrees"
    try:
        entries = sorted(e for e in worktrees.iterdir() if e.is_dir() and not e.is_symlink())
    except OSError:
        entries = []
    out += [entry / name for entry in entries for name in POINTERS]
    # the .git file of every linked worktree in the work tree (another run's, the train's)
    out += [f for f in map(_gitfile_of, entries) if f is not None and _inside(f, work_root)]
    # what the config includes, where a run may write (a project's shared .gitconfig)
    for config in dict.fromkeys([common / "config", common / "config.worktree"]):
        out += [f for f in included(config) if _inside(f, work_root) or _inside(f, common)]
    return list(_unique(out))


_INCLUDE = re.compile(r"^\s*\[\s*include(?:if)?\b", re.IGNORECASE)
_PATH = re.compile(r"^\s*path\s*=\s*(.*?)\s*$", re.IGNORECASE)


def included(config: Path, depth: int = 0) -> list[Path]:
    """The files ``config`` includes (``include.path``, ``includeIf.<cond>.path``), whatever
    the condition, and theirs in turn (a few levels): each one is the repository's config as
    much as ``config`` itself."""
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found: list[Path] = []
    inside = False
    for line in text.splitlines():
        if line.lstrip().startswith("["):
            inside = bool(_INCLUDE.match(line))
        elif inside and (m := _PATH.match(line)):
            value = m.group(1)
            if value.startswith('"') and value.endswith('"') and len(value) > 1:
                value = value[1:-1]
            target = Path(os.path.expanduser(value))
            found.append(Path(os.path.abspath(config.parent / target)))
    if depth < 3:
        found += [f for target in list(found) for f in included(target, depth + 1)]
    return found


def _gitfile_of(admin: Path) -> Path | None:
    """The ``.git`` file a linked worktree's folder names in its ``gitdir``."""
    try:
        text = (admin / "gitdir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return Path(os.path.abspath(admin / text)) if text else None


def _hideable(hidden: Iterable[Path], writable: Iterable[Path]) -> tuple[Path, ...]:
    """The hidden paths that exist, where they really are (a dotfiles manager's ~/.ssh is a
    link), less any that holds a writable folder: root working in a user's project under
    /home/<user> must still see it (that home's secrets stay hidden by name)."""
    writable = [Path(os.path.realpath(w)) for w in writable]
    out = []
    for path in hidden:
        if not _exists(path):
            continue
        real = Path(os.path.realpath(path))
        if not any(w == real or w.is_relative_to(real) for w in writable):
            out.append(real)
    return _unique(out)


def _account_home() -> Path | None:
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        return None


def _expand(path: str, home: Path | None) -> Path:
    if path.startswith("~") and home is not None:
        path = str(home) + path[1:]
    return Path(os.path.realpath(path))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _is_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


def _unique(paths: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(paths))


def reviewer_policy(policy: SandboxPolicy, files: Sequence[Path]) -> SandboxPolicy:
    """The reviewer's policy (SPEC §13 "Review"): ``policy`` with its whole work tree read-only
    but ``files`` (the change's task files) and what git needs of its directory, as for an
    agent; ``.ralph/`` stays read-only, the temporary folder and the agent's state folder stay
    writable. ``ralph.sandbox.allowWrite`` inside the work tree is not kept: nothing in the tree
    the reviewer judges is its to write.

    An editor writes a file as a new one beside it renamed over it (Claude Code's Edit does), so
    the folder holding a task file is writable and everything already in it but the task files
    is bound back read-only: what it can do there beyond the task files is make new files, which
    the host removes after the round (``loop/review_round.py``)."""
    root = policy.work_root
    git_write, _ = git_paths(root)
    kept = [p for p in policy.writable if p != root and (not _inside(p, root) or p in git_write)]
    named = [Path(os.path.realpath(f)) for f in files]
    named = [f for f in named if _inside(f, root) and f != root and f.is_file()]
    folders = list(dict.fromkeys(f.parent for f in named))
    again = [e for folder in folders for e in _entries(folder) if not _holds(e, named)]
    return SandboxPolicy(
        work_root=root,
        tmp_dir=policy.tmp_dir,
        read_only_first=(root,),
        writable=_unique([*kept, *folders]),
        hidden=policy.hidden,
        read_only=_unique([*again, *policy.read_only]),
        env=policy.env,
        allowed_domains=policy.allowed_domains,
    )


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted(folder / name for name in os.listdir(folder))
    except OSError:
        return []


def _holds(entry: Path, files: Sequence[Path]) -> bool:
    """``entry`` is one of ``files``, or a folder holding one (left writable)."""
    return any(f == entry or f.is_relative_to(entry) for f in files)
