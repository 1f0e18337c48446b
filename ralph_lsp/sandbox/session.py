"""One run's sandbox: checked before the run starts, opened once its work tree is known, and
the prefix every process of the run is started under (SPEC §10).

:func:`refusal` is the fail-closed check (``ralph.sandbox: "auto"`` and no sandbox here: the
run does not start, and the message names the cause and the fix). :meth:`Sandbox.open` makes
the run's private temporary folder and caches and decides the policy; :meth:`Sandbox.prefix`
is the argv a command is appended to (``bwrap … --`` or ``sandbox-exec -p …``);
:meth:`Sandbox.environment` the variables set inside; :meth:`Sandbox.describe` and
:meth:`Sandbox.to_json` what the run says of it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ralph_lsp.sandbox import bwrap, seatbelt, sockets
from ralph_lsp.sandbox.bridge import bridge_argv
from ralph_lsp.sandbox.domains import no_proxy_for
from ralph_lsp.sandbox.policy import (
    MADE_READ_ONLY,
    NO_GRANTS,
    Grants,
    SandboxPolicy,
    agent_state,
    build_policy,
)

SHOWN_PATHS = 6  # paths named per list in the run's first line


class SandboxUnavailable(Exception):
    """The sandbox cannot start here; the message names the cause and the fix."""


def refusal(mode: str) -> str | None:
    """Why a run with ``ralph.sandbox`` ``mode`` may not start here, or None."""
    if mode == "off":
        return None
    if sys.platform.startswith("linux"):
        found = bwrap.probe()
        return None if found.problem is None else f"the sandbox cannot start: {found.problem}"
    if sys.platform == "darwin":
        if seatbelt.locate() is None:
            return f"the sandbox cannot start: sandbox-exec is missing; {bwrap.OFF_HINT}"
        return None
    return (
        f"the sandbox cannot start: no sandbox on {sys.platform} (use WSL on Windows);"
        f" {bwrap.OFF_HINT}"
    )


@dataclass
class Sandbox:
    """The sandbox of one run."""

    kind: str  # "bwrap" | "seatbelt"
    version: str
    program: str
    policy: SandboxPolicy
    python: str = sys.executable  # runs the bridge inside (the standard library only)
    cover: tuple[str, ...] = ()  # bwrap's arguments laying the host's sockets over (once)
    source: str = ""  # where ``program`` was found (bwrap.Located.source)

    @classmethod
    def open(
        cls,
        work_root: Path,
        *,
        preset: str,
        env: Mapping[str, str],
        grants: Grants = NO_GRANTS,
    ) -> Sandbox:
        """The sandbox for a run working in ``work_root`` (writing only ``grants.confine_to`` of
        it, when given: a planning run). Raises ``SandboxUnavailable``."""
        problem = refusal("auto")
        if problem is not None:
            raise SandboxUnavailable(problem)
        tmp_dir = Path(tempfile.mkdtemp(prefix="ralph-sandbox-"))
        home = Path(env["HOME"]) if env.get("HOME") else None
        sockets.private_folder()  # made now, so that it is hidden from this run too
        hide = (*grants.deny_read, *map(str, sockets.private_folders()))
        hiding = replace(grants, deny_read=hide)
        policy = build_policy(work_root, tmp_dir, home=home, preset=preset, env=env, grants=hiding)
        _prepare(policy, agent_state(preset, env, home))
        if sys.platform == "darwin":
            program = seatbelt.locate() or seatbelt.SANDBOX_EXEC
            return cls("seatbelt", "", program, policy)
        found = bwrap.probe()
        assert found.program is not None
        cover = tuple(sockets.cover_argv(also=[os.path.realpath(home)] if home else []))
        return cls("bwrap", found.version, found.program, policy, source=found.source, cover=cover)

    def prefix(
        self,
        cwd: Path,
        *,
        proxy_socket: Path | None = None,
        status_file: Path | None = None,
        named: Sequence[str] = (),
    ) -> list[str]:
        """The argv a command (its program resolved) is appended to. With ``proxy_socket``
        (the agent's), the command runs behind the bridge to that egress proxy: its only way
        out of a network namespace that has nothing but a loopback of its own. Without it (a
        verification command) no proxy is in view at all: every run's proxy folder is hidden.
        ``named``: the command's program and the files its command line names, bound back
        read-only where a fresh ``/tmp`` would hide them."""
        if self.kind == "seatbelt":
            return seatbelt.argv(self.policy, self.program)
        # the program the host resolved and the files its command line names, where the fresh
        # /tmp would hide them (never one the policy hides)
        back = sockets.bind_back(p for p in named if not self._hidden(p) and not self._seen(p))
        if proxy_socket is None:
            return bwrap.argv(self.policy, self.program, cwd, cover=self.cover, extra=back)
        folder = str(proxy_socket.parent)  # this run's own, bound over the hidden private one
        extra = ["--ro-bind", folder, folder, *back]
        out = bwrap.argv(self.policy, self.program, cwd, cover=self.cover, extra=extra)
        no_proxy = no_proxy_for(self.policy.allowed_domains)
        bridge = bridge_argv(
            self.python, proxy_socket, [], no_proxy=no_proxy, status_file=status_file
        )
        return [*out, *bridge]

    def _seen(self, path: str) -> bool:
        """Inside a folder the sandbox shows already (bound back by the cover, or writable):
        binding onto it again is needless, and fails where the path is a link there."""
        shown = [
            Path(a) for i, a in enumerate(self.cover[1:], 1) if self.cover[i - 1] == "--ro-bind"
        ]
        shown = [p for p in shown if str(p) != os.devnull] + list(self.policy.writable)
        at = Path(os.path.abspath(path))
        return any(at == f or at.is_relative_to(f) for f in shown)

    def _hidden(self, path: str) -> bool:
        real = Path(os.path.realpath(path))
        return any(real == h or real.is_relative_to(h) for h in self.policy.hidden)

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` inside: less every variable that names a host socket or display (none of
        them is in view), with the run's own folders on top."""
        kept = {k: v for k, v in env.items() if k not in sockets.UNSET_VARIABLES}
        return {**kept, **self.policy.env}

    def describe(self) -> str:
        """``sandbox: bwrap 0.11.0 (wheel: /…/bwrap) — writable: …; hidden: …; domains: …``:
        which ``bwrap`` runs it, so that a person can tell a wheel's from the system's."""
        name = f"{self.kind} {self.version}".strip()
        if self.source:
            name += f" ({self.source}: {self.program})"
        domains = ", ".join(self.policy.allowed_domains) or "none (no network)"
        return (
            f"sandbox: {name} — writable: {_paths(self.policy.writable)};"
            f" read-only: {_paths(self.policy.read_only)};"
            f" hidden: {_paths(self.policy.hidden)}; domains: {domains}"
        )

    def to_json(self) -> dict[str, Any]:
        """``ralph/runStatus``'s ``sandbox`` (docs/lsp-extensions.md)."""
        return {
            "kind": self.kind,
            "writable": [str(p) for p in self.policy.writable],
            "hidden": [str(p) for p in self.policy.hidden],
            "allowedDomains": list(self.policy.allowed_domains),
        }

    def close(self) -> None:
        """Remove the run's private temporary folder and caches."""
        shutil.rmtree(self.policy.tmp_dir, ignore_errors=True)


def _prepare(policy: SandboxPolicy, state: Sequence[Path]) -> None:
    """Folders the run may write, and the read-only ones, made to exist before they are bound
    (a missing ``.git/hooks`` must not become a folder the agent could create; a missing
    ``~/.claude`` could not be made inside, where the home is read-only). What is already in the
    way of a read-only folder (a ``.ralph`` that is a file, a link) is left as it is and bound
    read-only as it is: the run goes on, and says what it cannot do there."""
    for folder in policy.env.values():
        os.makedirs(folder, mode=0o700, exist_ok=True)
    for path in state:
        if path.suffix == ".json":  # ~/.claude.json: Claude Code's own file, {} when new
            if not path.exists() and path.parent.is_dir():
                path.write_text("{}\n", encoding="utf-8")
        else:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
    for path in policy.read_only:
        if path.name in MADE_READ_ONLY and path.parent.is_dir() and not os.path.lexists(path):
            path.mkdir()


def _paths(paths: Sequence[Path]) -> str:
    shown = [str(p) for p in paths[:SHOWN_PATHS]]
    more = len(paths) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "") if shown else "none"
