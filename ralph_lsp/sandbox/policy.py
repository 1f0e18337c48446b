"""What a run's sandbox grants (SPEC §10), decided from plain paths, before any mechanism.

:func:`build_policy` gives a :class:`SandboxPolicy`: the folders a run may write (its work
tree, a private temporary folder, per-run package caches, the agent CLI's own state folder,
``ralph.sandbox.allowWrite``, and what ``git commit`` needs of a git directory outside the work
tree), the paths it may not even read (secrets in the home: credentials, shell histories, editor
state, the other agent CLIs' state; other users' homes, ``ralph.sandbox.denyRead``), and the
paths inside a writable folder that are put back read-only (``.git/hooks``, ``.git/config``,
every ``config.worktree``, ``.git/info``, ``.ralph/``, and every file that says where the
repository is: ``repository.git_pointers``). The mechanisms (``bwrap.py``,
``seatbelt.py``) only translate it. Reads files, never writes any.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ralph_lsp.sandbox.repository import git_paths, inside, unique

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

# The server's compiled generated code (proc/codecache.py): code the server runs at its next
# start: never writable inside, even under a writable home or ~/.cache (sandbox.allowWrite).
CODE_CACHE = "ralph-lsp"
# Read-only folders made when missing, so that the run cannot make them its own.
MADE_READ_ONLY = ("hooks", "info", ".ralph", CODE_CACHE)

# Package caches, each pointed into the run's own cache folder.
CACHE_VARIABLES = {
    "PIP_CACHE_DIR": "pip",
    "npm_config_cache": "npm",
    "UV_CACHE_DIR": "uv",
    "XDG_CACHE_HOME": "xdg",
}


@dataclass(frozen=True)
class Grants:
    """What one run asks of its sandbox beyond its work tree: the folders it may also write
    (``ralph.sandbox.allowWrite``), those it may not read, the hosts it may reach, where its
    ``.ralph/`` lives when that is not the work tree (``history_root``), and ``confine_to`` (a
    planning run's change folder, SPEC §14): the one folder of the work tree it writes, the rest
    read-only, git's directory and ``allow_write`` too."""

    allow_write: Sequence[str] = ()
    deny_read: Sequence[str] = ()
    allowed_domains: Sequence[str] = ()
    history_root: Path | None = None
    confine_to: Path | None = None


NO_GRANTS = Grants()


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


def code_cache_folder(home: Path | None) -> Path | None:
    """The host's folder of the server's generated-code cache (as ``proc/codecache.py`` finds
    it: ``$XDG_CACHE_HOME/ralph-lsp``, else ``~/.cache/ralph-lsp``), resolved."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):
        if home is None:
            return None
        base = os.path.join(home, ".cache")
    return Path(os.path.realpath(os.path.join(base, CODE_CACHE)))


def build_policy(
    work_root: Path,
    tmp_dir: Path,
    *,
    home: Path | None,
    preset: str,
    env: Mapping[str, str],
    grants: Grants = NO_GRANTS,
) -> SandboxPolicy:
    """The policy of one run whose agent works in ``work_root``, given what it asks beyond that
    (``grants``)."""
    allow_write, deny_read = grants.allow_write, grants.deny_read
    history_root, confine_to = grants.history_root, grants.confine_to
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
    hidden += [s for h in other_homes(home) if inside(work_root, h) for s in secrets_of(h)]
    hidden += [_expand(p, home) for p in deny_read]
    read_only = git_read_only
    for root in dict.fromkeys([work_root, *([history_root] if history_root else [])]):
        read_only.append(Path(os.path.realpath(root)) / ".ralph")
    code_cache = code_cache_folder(home)
    if code_cache is not None and any(inside(code_cache, w) for w in unique(writable)):
        read_only.append(code_cache)
    run_env = {name: str(caches / sub) for name, sub in CACHE_VARIABLES.items()}
    run_env["TMPDIR"] = str(tmp_dir)
    return SandboxPolicy(
        work_root=work_root,
        tmp_dir=tmp_dir,
        writable=unique(writable),
        hidden=_hideable(hidden, writable),
        # what exists, and the folders made before they are bound (session.py)
        read_only=unique(p for p in read_only if _exists(p) or p.name in MADE_READ_ONLY),
        env=run_env,
        allowed_domains=tuple(dict.fromkeys(grants.allowed_domains)),
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
    return unique(out)


def _account_home() -> Path | None:
    try:
        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (KeyError, OSError):
        return None


def _expand(path: str, home: Path | None) -> Path:
    if path.startswith("~") and home is not None:
        path = str(home) + path[1:]
    return Path(os.path.realpath(path))


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


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
    kept = [p for p in policy.writable if p != root and (not inside(p, root) or p in git_write)]
    named = [Path(os.path.realpath(f)) for f in files]
    named = [f for f in named if inside(f, root) and f != root and f.is_file()]
    folders = list(dict.fromkeys(f.parent for f in named))
    again = [e for folder in folders for e in _entries(folder) if not _holds(e, named)]
    return SandboxPolicy(
        work_root=root,
        tmp_dir=policy.tmp_dir,
        read_only_first=(root,),
        writable=unique([*kept, *folders]),
        hidden=policy.hidden,
        read_only=unique([*again, *policy.read_only]),
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
