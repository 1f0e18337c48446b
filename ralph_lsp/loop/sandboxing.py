"""A run's sandbox (SPEC §10), as the loop uses it: opened once the work tree is known (or
``off``, said as loudly), the agent's egress proxy started beside it, every spawn wrapped in
it, and what it refused (in the output, or at the proxy) kept for the history.

The decision of what a run may touch is ``sandbox/``'s; this module only meets it with the run:
its settings, its log, its status, and the ``SpawnSpec`` of each agent and check. What the
sandbox grants is read from the settings a workspace cannot set (``ralph.sandbox``) and from
this process's own environment, never from ``ralph.env``, which a workspace can set.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ralph_lsp.agents.base import Refusal
from ralph_lsp.agents.cli_config import codex_user_home
from ralph_lsp.agents.user_config_codex_gemini import codex_provider_url
from ralph_lsp.proc.process import AgentStartError, SpawnSpec
from ralph_lsp.proc.watchdog import describe_start_error
from ralph_lsp.runs.states import RunState
from ralph_lsp.runs.status import Level, RunEnd
from ralph_lsp.sandbox import Grants, Sandbox, SandboxUnavailable, proxy
from ralph_lsp.sandbox.bridge import proxy_env
from ralph_lsp.sandbox.domains import allowed_domains, base_url_entry, no_proxy_for
from ralph_lsp.sandbox.git_guard import GitGuard
from ralph_lsp.sandbox.policy import reviewer_policy
from ralph_lsp.sandbox.refusals import may_say_refused, refused
from ralph_lsp.settings import Settings

OFF_LINE = (
    "sandbox: off ({why}): the agent and the checks run with your full authority, network included"
)
# The environment of the server or the CLI (the user's own, never a workspace's) may turn the
# sandbox off too: said as loudly as the setting.
OFF_VARIABLE = "RALPH_SANDBOX"


def mode(settings: Settings) -> tuple[str, str]:
    """(``auto`` | ``off``, why off)."""
    if settings.sandbox == "off":
        return "off", 'ralph.sandbox is "off"'
    if os.environ.get(OFF_VARIABLE) == "off":
        return "off", f"{OFF_VARIABLE}=off in the environment"
    return "auto", ""


REFUSAL_TOOL = "Sandbox"
# The proxy variables (any case), which a verification command never gets: it has no proxy.
CHECK_UNSET = frozenset(
    {"http_proxy", "https_proxy", "all_proxy", "no_proxy", "node_use_env_proxy"}
)
Log = Callable[[str, Level], None]


class RunSandbox:
    """One run's sandbox and its agent's egress proxy."""

    def __init__(
        self, box: Sandbox, log: Log, shown_from: Path | None = None, also: Sequence[Path] = ()
    ) -> None:
        self.box = box
        self.log = log
        self.refused: list[Refusal] = []  # at the proxy, since the last take
        self.proxy = proxy.EgressProxy(box.policy.allowed_domains, self._refused)
        # what a process inside writes to git's pointers is undone before the host's git runs
        # and what widens the next run's sandbox (``also``: Codex's config.toml) is undone too
        self.guard = GitGuard(box.policy.work_root, shown_from, also)
        # where the bridge says how the agent ended (a new name per spawn), and its program
        self.status_file: Path | None = None
        self.program = ""

    @classmethod
    async def open(
        cls,
        settings: Settings,
        work_root: Path,
        history_root: Path,
        log: Log,
        confine_to: Path | None = None,
        *,
        egress: bool = True,
    ) -> RunSandbox | None:
        """The run's sandbox, said in its log; None when ``ralph.sandbox`` is ``off``. A
        sandbox that cannot start ends the run before any agent is spawned (``RunEnd``).
        ``confine_to``: a planning run's change folder, the one folder it writes (SPEC §14).
        ``egress=False``: checks only (a merge's verification), which never have a proxy, so
        none is started (:meth:`agent` is then refused)."""
        chosen, why = mode(settings)
        if chosen == "off":
            log(OFF_LINE.format(why=why), "info")
            return None
        # What the sandbox grants (the allowlist's base URLs, HOME and so the hidden secrets,
        # the agent's state folder, Codex's provider) is read from this process's environment,
        # the person's own: ralph.env may be a workspace's, and never widens the sandbox.
        env: Mapping[str, str] = os.environ
        try:
            domains = allowed_domains(settings.agent, env, _extra_domains(settings, env))
            box = Sandbox.open(
                work_root,
                preset=settings.agent,
                env=env,
                grants=Grants(
                    allow_write=settings.sandbox_allow_write,
                    deny_read=settings.sandbox_deny_read,
                    allowed_domains=domains,
                    history_root=history_root,
                    confine_to=confine_to,
                ),
            )
        except (SandboxUnavailable, ValueError) as exc:
            raise RunEnd(RunState.FAILED, f"{exc}") from None
        except OSError as exc:
            raise RunEnd(RunState.FAILED, f"the sandbox cannot start: {exc}") from None
        try:
            run = cls(box, log, Path(os.path.realpath(history_root)), _widening(settings, env))
            # macOS has no network namespace: the agent reaches the proxy on the loopback
            tcp = 0 if box.kind == "seatbelt" else None
            if egress:
                await run.proxy.start(proxy.private_socket_path(), tcp)
        except (OSError, ValueError) as exc:
            box.close()  # ValueError: an allowlist entry the proxy cannot read
            why = f"the sandbox's egress proxy cannot start: {exc}"
            raise RunEnd(RunState.FAILED, why) from None
        log(box.describe(), "info")
        return run

    def _refused(self, refusal: proxy.Refusal) -> None:
        self.refused.append(Refusal(REFUSAL_TOOL, f"connect: {refusal}"))
        self.log(
            f"⚠ the sandbox refused a connection to {refusal} — allow a domain with"
            " ralph.sandbox.allowedDomains",
            "warning",
        )

    def agent(self, spec: SpawnSpec) -> SpawnSpec:
        """The agent's ``spec`` inside the sandbox, behind the bridge to the proxy."""
        socket = self.proxy.socket_path
        if socket is None and self.proxy.tcp_port is None:
            raise AgentStartError("os_error", "the sandbox was opened for checks only")
        self.status_file = self.box.policy.tmp_dir / f"agent-ended-{os.urandom(8).hex()}.json"
        # the program as the host finds it on the agent's PATH: bound in where it would be hidden
        name = spec.argv[0] if spec.argv else ""
        self.program = shutil.which(name, path=spec.env.get("PATH")) or name if name else ""
        prefix = self.box.prefix(
            spec.cwd,
            proxy_socket=socket,
            status_file=self.status_file,
            named=_named(self.program, spec.argv),
        )
        env = self.box.environment(spec.env)
        if self.proxy.tcp_port is not None:  # Seatbelt: no bridge, the proxy's own port
            env.update(
                proxy_env(self.proxy.tcp_port, no_proxy_for(self.box.policy.allowed_domains))
            )
        return replace(spec, env=env, wrapper=tuple(prefix))

    def reviewer(self, spec: SpawnSpec, files: Sequence[Path]) -> SpawnSpec:
        """The reviewer's ``spec`` (SPEC §13): as an agent's, behind the same proxy, but in the
        reviewer's profile: the work tree read-only except ``files``, the change's task files
        (:func:`~ralph_lsp.sandbox.policy.reviewer_policy`)."""
        whole = self.box
        self.box = replace(whole, policy=reviewer_policy(whole.policy, files))
        try:
            return self.agent(spec)
        finally:
            self.box = whole

    def agent_ended(self, code: int | None) -> tuple[int | None, AgentStartError | None]:
        """The agent's exit code as the run records it, and its start error, from what the
        bridge wrote (:func:`~ralph_lsp.sandbox.bridge.write_status`): bubblewrap reports a
        death by signal n as 128 + n, recorded as -n as unsandboxed; a program that could not
        be executed is a start error, as unsandboxed, not an exit 127. Only a report that
        agrees with bubblewrap's exit is taken (what the agent could write there is its own
        ending at most)."""
        said = _read_status(self.status_file)
        self.status_file = None
        signum, error = said.get("signal"), said.get("error")
        if isinstance(signum, int) and 0 < signum < 128 and code == 128 + signum:
            return -signum, None
        if isinstance(error, int) and code == 127:
            exc = OSError(error, str(said.get("message", "")))
            kind, message = describe_start_error(exc, self.program, self.program)
            return None, AgentStartError(kind, message)  # type: ignore[arg-type]
        return code, None

    def check(self, spec: SpawnSpec) -> SpawnSpec:
        """A verification command's ``spec`` inside the sandbox: no network but its loopback,
        no proxy socket in view and no proxy variable (not even one of the user's own)."""
        program = shutil.which(spec.argv[0], path=spec.env.get("PATH")) if spec.argv else None
        prefix = self.box.prefix(spec.cwd, named=_named(program or "", spec.argv))
        env = self.box.environment(spec.env)
        env = {k: v for k, v in env.items() if k.lower() not in CHECK_UNSET}
        return replace(spec, env=env, wrapper=tuple(prefix))

    def take_refusals(self) -> list[Refusal]:
        taken, self.refused = self.refused, []
        return taken

    def watch_git(self) -> None:
        """Before a process inside starts: the state of every file that says where the
        repository is (``sandbox/git_guard.py``)."""
        self.guard.watch()

    def undo_git(self, who: str) -> list[Refusal]:
        """After it ended, before any git command of the host: what ``who`` (``the agent``)
        wrote to those files put back, each one said and returned as a refusal."""
        found = [f"{who} wrote {line}" for line in self.guard.undo()]
        for text in found:
            self.log(
                f"⚠ the sandbox refused: {text} (what a run writes may not redirect git,"
                " nor widen a later run's sandbox)",
                "warning",
            )
        return [Refusal(REFUSAL_TOOL, text) for text in found]

    def to_json(self) -> dict[str, object]:
        return self.box.to_json()

    async def close(self) -> None:
        socket = self.proxy.socket_path
        try:
            await self.proxy.close()
        finally:
            if socket is not None:
                shutil.rmtree(socket.parent, ignore_errors=True)
            self.box.close()


def _widening(settings: Settings, env: Mapping[str, str]) -> list[Path]:
    """Files a run's agent may write (its state folder is writable) that the host reads to
    decide a later run's sandbox: Codex's ``config.toml``, whose provider's ``base_url`` joins
    the allowlist (:func:`_extra_domains`). What the agent makes or changes there is undone
    after each of its processes, as git's pointers are."""
    home = codex_user_home(env) if settings.agent == "codex" else None
    return [home / "config.toml"] if home is not None else []


def _extra_domains(settings: Settings, env: Mapping[str, str]) -> list[str]:
    """``ralph.sandbox.allowedDomains``, and the host of the model provider a Codex user's own
    config.toml selects (its ``base_url``: where Codex connects, as ``OPENAI_BASE_URL`` is)."""
    extra = list(settings.sandbox_allowed_domains)
    url = codex_provider_url(env) if settings.agent == "codex" else None
    entry = base_url_entry(url) if url else None
    return [*extra, entry] if entry else extra


def refusals_in(lines: Sequence[str]) -> list[Refusal]:
    """What the sandbox refused, as the output of a process inside it says."""
    if not may_say_refused("\n".join(lines)):
        return []  # the usual batch: one pass over its text, no pattern per line
    found: list[Refusal] = []
    for line in lines:
        seen = refused(line)
        if seen is not None:
            found.append(Refusal(REFUSAL_TOOL, f"{seen[0]}: {seen[1]}"))
    return found


def _named(program: str, argv: Sequence[str]) -> list[str]:
    """The program and the files a command line names (absolute paths of regular files), each
    as given and where it really is: bound back inside where a fresh ``/tmp`` would hide them."""
    named = [program, *(w for w in argv[1:] if os.path.isabs(w))]
    return [p for w in named if w and os.path.isfile(w) for p in (w, os.path.realpath(w))]


def _read_status(path: Path | None) -> dict[str, object]:
    """The bridge's report (a small regular file, never read through a link), removed."""
    if path is None:
        return {}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        data = os.read(fd, 4096) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
    try:
        said = json.loads(data)
    except ValueError:
        return {}
    return said if isinstance(said, dict) else {}
