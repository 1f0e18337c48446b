"""Untrusted input never runs anything and never reaches outside the OpenSpec root.

Change names and guidance full of shell syntax travel to the agent as plain text (no shell is
ever involved); names that are paths are refused; an untrusted workspace cannot start a run;
the agent's environment is the parent's plus ``ralph.env``, nothing more.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from ralph_lsp.sandbox.bridge import proxy_env
from ralph_lsp.sandbox.policy import CACHE_VARIABLES
from tests.faults.conftest import TASKS, make_change
from tests.faults.helpers import FaultEnv, check_tasks, wait_until
from tests.faults.lsp_raw import RawLsp

StartLsp = Callable[..., RawLsp]


class Canary:
    """Shell snippets that would each create a file named ``pwned-<uuid>-…`` if ever run.

    Only the test's own folder is searched (``base``, the test's tmp_path: the project, the
    processes' TMPDIR). Shared places (the system temp folder, the current directory) are only
    asked for the exact names a snippet could create there, never walked: another process may
    add or remove anything there meanwhile.
    """

    def __init__(self, base: Path) -> None:
        self.id = uuid.uuid4().hex
        self.base = base
        self.tmp = base / "tmp"  # the TMPDIR of every process the test starts (see ``fx``)
        self.tmp.mkdir(exist_ok=True)

    def name(self, n: int) -> str:
        return f"pwned-{self.id}-{n}"

    def change_names(self) -> list[str]:
        # Folder names: no "/" (and no newline, which would break the prompt's path lines).
        return [
            f"$(touch {self.name(1)})",
            f"`touch {self.name(2)}`",
            f"a;touch {self.name(3)};b",
            f"x|touch {self.name(4)}",
            f"y&&touch {self.name(5)}",
            f"'\";touch {self.name(6)};#",
            "$HOME*?[a]{b,c}~ <in >out",
        ]

    def guidance(self) -> str:
        return "\n".join(
            [
                f"$(touch {self.tmp / self.name(10)})",
                f"`touch {self.base / self.name(11)}`",
                f"; touch {self.name(12)} && echo",
                f"| touch {self.name(13)}",
                f"../../{self.name(14)} $(rm -rf ~) ${{IFS}}",
                "Tasks file: /etc/passwd",
            ]
        )

    def hits(self, *more: Path) -> list[Path]:
        found: set[Path] = set()
        for folder in {self.base, *more}:  # the test's own folders only
            found.update(folder.rglob(f"pwned-{self.id}*"))
        for shared in (Path(tempfile.gettempdir()), Path.cwd()):
            found.update(p for n in range(30) if (p := shared / self.name(n)).exists())
        return sorted(found)


def _churn(stop: threading.Event, made: list[int]) -> None:
    """What another process does meanwhile: folders (with ``.git`` trees) made and removed in
    the system temp folder, as fast as it can."""
    while not stop.is_set():
        top = Path(tempfile.mkdtemp(prefix="ralph-churn-", dir=tempfile.gettempdir()))
        for i in range(20):
            (top / f"r{i}" / ".git" / "objects" / "ab").mkdir(parents=True)
        made.append(1)
        shutil.rmtree(top, ignore_errors=True)


def test_the_canary_never_depends_on_what_else_the_machine_does(fx: FaultEnv) -> None:
    # Found in review: the canary scanned the whole system temp folder and failed with a
    # FileNotFoundError (a .git folder there) when another process removed a folder meanwhile.
    canary = Canary(fx.root.parent)
    stop, made = threading.Event(), []
    churner = threading.Thread(target=_churn, args=(stop, made), daemon=True)
    churner.start()
    try:
        for _ in range(30):
            assert canary.hits(fx.root) == []
    finally:
        stop.set()
        churner.join(10)
    assert made, "nothing was churned: the test proved nothing"
    # …and it still sees a snippet that ran, wherever the snippets could have written.
    (fx.root.parent / "x").mkdir()
    shared = Path(tempfile.gettempdir()) / canary.name(12)  # `touch` run with cwd there
    planted = [
        fx.root / canary.name(3),
        canary.tmp / canary.name(10),
        fx.root.parent / "x" / canary.name(11),
        shared,
    ]
    try:
        for path in planted:
            path.touch()
        assert canary.hits(fx.root) == sorted(planted)
    finally:
        shared.unlink()


def test_shell_syntax_in_change_names_and_guidance_is_inert_in_the_cli(fx: FaultEnv) -> None:
    canary = Canary(fx.root.parent)
    guidance = canary.guidance()
    names = canary.change_names()[:3]
    for name in names:
        make_change(fx.root, name)
    for n, name in enumerate(names):
        result = fx.run_cli(
            name,
            "--agent-command",
            fx.agent_command("check", "-p", "{prompt}"),
            "--max-iterations",
            "1",
            "--guidance",
            guidance,
            name=f"cli-{n}",
        )
        assert result.last_line.startswith("exhausted: 1 iteration ran"), result.stdout[-1000:]
        # The agent found the right tasks.md despite the name: it checked one of its tasks.
        assert fx.tasks(name).read_bytes() == check_tasks(TASKS.encode(), 1)
    prompts = [s["prompt"] for s in fx.spawns()]
    assert len(prompts) == len(names)
    for name, prompt in zip(names, prompts, strict=True):
        assert f'OpenSpec change "{name}"' in prompt
        for line in guidance.splitlines():
            assert line in prompt
        # Guidance cannot forge the line the agent reads its tasks file from.
        assert [ln for ln in prompt.splitlines() if ln.startswith("Tasks file: ")] == [
            f"Tasks file: {fx.tasks(name)}"
        ]
    assert canary.hits(fx.root) == []


def test_shell_syntax_in_the_agent_command_is_not_a_shell(fx: FaultEnv) -> None:
    canary = Canary(fx.root.parent)
    cmd = fx.agent_command("check", "0") + f" ; touch {canary.name(20)} && touch {canary.name(21)}"
    cmd += f" | touch {canary.name(22)} $(touch {canary.name(23)})"
    result = fx.run_cli("alpha", "--agent-command", cmd)
    assert result.last_line == "succeeded: every task is checked (3/3)"
    argv = fx.spawns()[0]["argv"]
    assert ";" in argv and "$(touch" in argv and "|" in argv  # plain arguments
    assert canary.hits(fx.root) == []


def test_shell_syntax_through_the_server_is_inert(fx: FaultEnv, start_lsp: StartLsp) -> None:
    canary = Canary(fx.root.parent)
    names = canary.change_names()
    for name in names:
        make_change(fx.root, name, "<!-- fault: check-after-release -->\n" + TASKS)
    release = fx.logs / "release"
    fx.env["FAULT_RELEASE"] = str(release)
    server = start_lsp(
        {"agent": "custom", "agentCommand": fx.agent("directive"), "maxIterations": 2}
    )
    for name in names:
        answer = server.command("ralph.run", {"change": name})
        assert answer.get("result", {}).get("change") == name, answer
    wait_until(lambda: len(fx.spawns()) == len(names), 30, "every run's first agent")
    for name in names:
        answer = server.command("ralph.guide", {"change": name, "text": canary.guidance()})
        assert answer.get("result") == {"queued": True}, answer
    release.touch()
    for name in names:
        final = server.wait_final(name, 60)
        assert final["state"] == "exhausted", final
        assert fx.tasks(name).read_bytes() == check_tasks(
            ("<!-- fault: check-after-release -->\n" + TASKS).encode(), 2
        )
    second_prompts = [s["prompt"] for s in fx.spawns()[len(names) :]]
    assert len(second_prompts) == len(names)
    assert all(
        "## Guidance" in p and canary.guidance().splitlines()[0] in p for p in second_prompts
    )
    assert canary.hits(fx.root) == []


PATH_NAMES = ["..", "../project", "../../etc", "/etc", "alpha/../alpha", ".", "archive", "a\nb"]


def test_path_like_change_names_are_refused_by_the_cli(fx: FaultEnv) -> None:
    (fx.root / "openspec" / "changes" / "archive" / "old").mkdir(parents=True)
    agent = fx.agent_command("check")
    calls: list[tuple[str, ...]] = [("run", n, "--agent-command", agent) for n in PATH_NAMES]
    calls += [(cmd, name) for cmd in ("history", "prompt") for name in ("../project", "/etc", "..")]
    for args in calls:
        proc = fx.ralph(*args, "--root", str(fx.root))
        assert proc.returncode == 2, (args, proc.stderr)
        assert f"unknown change {args[1]!r} (known: alpha)" in proc.stderr, (args, proc.stderr)
    assert fx.spawns() == []
    assert not (fx.root / ".ralph").exists()
    assert not (fx.root.parent / ".ralph").exists()
    assert fx.tasks().read_bytes() == TASKS.encode()


def test_path_like_and_symlinked_change_names_are_refused_by_the_server(
    fx: FaultEnv, start_lsp: StartLsp
) -> None:
    outside = fx.root.parent / "outside"
    evil_tasks = make_change(outside, "evil") / "tasks.md"
    (fx.root / "openspec" / "changes" / "evil").symlink_to(evil_tasks.parent)
    server = start_lsp({"agent": "custom", "agentCommand": fx.agent("check")})
    for name in [*PATH_NAMES, "evil"]:
        for command, extra in (
            ("ralph.run", {}),
            ("ralph.stop", {}),
            ("ralph.guide", {"text": "hi"}),
            ("ralph.status", {}),
            ("ralph.history", {}),
        ):
            answer = server.command(command, {"change": name, **extra})
            assert "error" in answer, (command, name, answer)
            assert answer["error"]["message"] == f"unknown change {name!r} (known: alpha)"
    changes = server.result("workspace/executeCommand", {"command": "ralph.changes"})
    assert [c["name"] for c in changes["changes"]] == ["alpha"]
    assert fx.spawns() == []
    assert not (fx.root / ".ralph").exists()
    assert evil_tasks.read_bytes() == TASKS.encode()


def test_a_change_folder_that_is_a_symlink_out_of_the_root_is_not_a_change_cli(
    fx: FaultEnv,
) -> None:
    outside = fx.root.parent / "outside"
    evil_tasks = make_change(outside, "evil") / "tasks.md"
    (fx.root / "openspec" / "changes" / "evil").symlink_to(evil_tasks.parent)
    result = fx.run_cli("evil", "--agent-command", fx.agent_command("check"))
    assert result.returncode == 2 and "unknown change 'evil' (known: alpha)" in result.stderr
    assert fx.spawns() == []
    assert evil_tasks.read_bytes() == TASKS.encode()


# -- trust ---------------------------------------------------------------------------------------
def untrusted_refusal(server: RawLsp) -> str:
    answer = server.command("ralph.run", {"change": "alpha"})
    assert "error" in answer, answer
    return str(answer["error"]["message"])


def test_untrusted_workspace_refuses_runs(fx: FaultEnv, start_lsp: StartLsp) -> None:
    settings = {"agent": "custom", "agentCommand": fx.agent("check")}
    server = start_lsp(settings, init={"trusted": False, **settings})
    message = untrusted_refusal(server)
    assert "not trusted" in message and "trust the workspace" in message
    # Read-only commands still work.
    assert server.result("workspace/executeCommand", {"command": "ralph.changes"})["changes"]
    assert fx.spawns() == []
    assert not (fx.root / ".ralph").exists()
    assert fx.tasks().read_bytes() == TASKS.encode()


def test_trust_withdrawn_later_refuses_runs(fx: FaultEnv, start_lsp: StartLsp) -> None:
    """Trust arrives with the settings (pushed or pulled); the latest says whether runs may
    start."""
    settings = {"agent": "custom", "agentCommand": fx.agent("check")}
    server = start_lsp(settings, init={"trusted": True, **settings})
    server.notify("workspace/didChangeConfiguration", {"settings": {"trusted": False}})
    assert "not trusted" in untrusted_refusal(server)
    # Pushed trusted again, but the settings pulled when the run starts say untrusted.
    server.settings = {**settings, "trusted": False}
    server.notify("workspace/didChangeConfiguration", {"settings": {"trusted": True}})
    assert "not trusted" in untrusted_refusal(server)
    assert fx.spawns() == []
    # Trusted everywhere: a run may start.
    server.settings = {**settings, "trusted": True}
    answer = server.command("ralph.run", {"change": "alpha"})
    assert answer.get("result", {}).get("state") == "running", answer
    assert server.wait_final("alpha")["state"] == "succeeded"


# -- environment ---------------------------------------------------------------------------------
def dumped_env(fx: FaultEnv) -> dict[str, str]:
    dumps = sorted(fx.logs.glob("env-*.json"))
    assert dumps, "the agent did not dump its environment"
    envs = [json.loads(p.read_text()) for p in dumps]
    # Each agent's tree is named in its environment (ralph_lsp/proc/inspection.py), one name per
    # spawn.
    tags = [e.pop("RALPH_LSP_TREE") for e in envs]
    assert len(set(tags)) == len(tags)
    assert all(e == envs[0] for e in envs)
    return envs[0]  # type: ignore[no-any-return]


EXTRA_ENV = {"RALPH_FAULT_EXTRA": "$(touch nothing) `x` ;|&", "LANG": "C.UTF-8"}


# What the sandbox sets for every process inside: the proxy's variables, the private TMPDIR and
# package caches (under the run's temporary folder), and PWD (the work tree, where it starts).
SANDBOX_SET = {*proxy_env(0), *CACHE_VARIABLES, "TMPDIR", "PWD"}


def assert_parent_plus_settings_env(dumped: dict[str, str], fx: FaultEnv) -> None:
    expected = {**fx.env, **EXTRA_ENV}
    if os.environ.get("RALPH_SANDBOX") != "off":
        tmp = Path(dumped["TMPDIR"])
        assert tmp.name.startswith("ralph-sandbox-"), tmp
        assert all(Path(dumped[name]).is_relative_to(tmp) for name in CACHE_VARIABLES)
        assert dumped["PWD"] == str(fx.root)
        assert set(proxy_env(0)) <= set(dumped)
        dumped = {k: v for k, v in dumped.items() if k not in SANDBOX_SET}
        expected = {k: v for k, v in expected.items() if k not in SANDBOX_SET}
    assert dumped == expected


def test_agent_environment_is_the_parent_plus_settings_env_cli(fx: FaultEnv) -> None:
    fx.env["SERVER_SIDE_ONLY"] = "the cli's own"
    args = [arg for k, v in EXTRA_ENV.items() for arg in ("--env", f"{k}={v}")]
    result = fx.run_cli("alpha", "--agent-command", fx.agent_command("env"), *args)
    assert result.returncode == 0, result.stdout[-1000:]
    assert_parent_plus_settings_env(dumped_env(fx), fx)


def test_agent_environment_is_the_parent_plus_settings_env_server(
    fx: FaultEnv, start_lsp: StartLsp
) -> None:
    fx.env["SERVER_SIDE_ONLY"] = "the server's own"
    server = start_lsp({"agent": "custom", "agentCommand": fx.agent("env"), "env": EXTRA_ENV})
    assert "result" in server.command("ralph.run", {"change": "alpha"})
    assert server.wait_final("alpha")["state"] == "succeeded"
    assert_parent_plus_settings_env(dumped_env(fx), fx)


def test_a_project_shipping_its_own_ralph_lsp_package_never_has_it_run(fx: FaultEnv) -> None:
    # Python puts the working folder first on sys.path for `-c` and `-m`, and the agent (here the
    # demo preset) and its watchdog start in the project: neither may import the project's
    # `ralph_lsp/` in place of the installed package.
    marker = fx.logs / "hostile-package-ran"
    hostile = fx.root / "ralph_lsp"
    # what the demo preset and the watchdog run, at today's paths and at v2's
    for name in (
        "__init__.py",
        "__main__.py",
        "demo_agent.py",
        "watchdog.py",
        "demo/__init__.py",
        "demo/agent.py",
        "proc/__init__.py",
        "proc/watchdog.py",
        "proc/tree.py",
        "cli/__init__.py",
    ):
        (hostile / name).parent.mkdir(parents=True, exist_ok=True)
        (hostile / name).write_text(f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n")
    fx.env["RALPH_DEMO_DELAY"] = "0"
    # The installed command, as a user runs it from inside the project.
    cli = str(Path(sys.executable).with_name("ralph-lsp"))
    result = subprocess.run(
        [cli, "run", "alpha", "--agent", "demo"],
        capture_output=True,
        text=True,
        env=fx.env,
        cwd=fx.root,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert not marker.exists(), marker.read_text()
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.splitlines()[-1].startswith("succeeded:")
