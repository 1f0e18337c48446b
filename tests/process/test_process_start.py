"""Starting agents: exit codes, environment, stdin, and the errors a user can act on."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ralph_lsp.proc.process import AgentProcess, AgentStartError, SpawnSpec, resolve_program


async def collect(proc: AgentProcess) -> list[tuple[str, str]]:
    return [item async for item in proc.lines()]


async def test_exit_code_and_both_streams(spec: Callable[..., SpawnSpec]) -> None:
    proc = await AgentProcess.start(spec("crash.py", "exit", "3"))
    lines = await collect(proc)
    assert ("stdout", "about to crash") in lines
    assert ("stderr", "crash: going down") in lines
    assert await proc.wait() == 3
    assert proc.returncode == 3


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV])
async def test_killed_by_signal_is_minus_n(spec: Callable[..., SpawnSpec], signum: int) -> None:
    proc = await AgentProcess.start(spec("crash.py", "signal", str(signum)))
    await collect(proc)
    assert await proc.wait() == -signum


async def test_pid_is_the_agent_in_its_own_session(spec: Callable[..., SpawnSpec]) -> None:
    proc = await AgentProcess.start(spec("sleep_forever.py"))
    try:
        assert proc.pid != proc.watchdog_pid
        assert os.getsid(proc.pid) == proc.pid  # a new session, so a new process group too
        assert os.getpgid(proc.pid) == proc.pid
        # (cmdline is empty for a moment while the kernel finishes the exec)
        deadline = time.monotonic() + 3
        while b"sleep_forever.py" not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
    finally:
        await proc.terminate(1.0)


async def test_cwd_env_and_devnull_stdin(agent_env: dict[str, str], tmp_path: Path) -> None:
    code = (
        "import os, sys; print(os.getcwd()); print(os.environ['RALPH_X']); "
        "print(len(sys.stdin.buffer.read())); print(sorted(os.listdir('/proc/self/fd')))"
    )
    env = dict(agent_env, RALPH_X="hello")
    proc = await AgentProcess.start(SpawnSpec([sys.executable, "-c", code], tmp_path, env, None))
    lines = [line for _, line in await collect(proc)]
    assert await proc.wait() == 0
    assert lines[:3] == [str(tmp_path), "hello", "0"]
    # only stdin/stdout/stderr (+ the fd listdir itself opens): no control or status pipe leaked
    assert len(eval(lines[3])) <= 4


async def test_prompt_on_stdin_arrives_intact(spec: Callable[..., SpawnSpec]) -> None:
    import hashlib

    prompt = os.urandom(1024 * 1024)
    proc = await AgentProcess.start(spec("echo_stdin.py", stdin=prompt))
    lines = await collect(proc)
    assert await proc.wait() == 0
    assert lines == [("stdout", f"{len(prompt)} {hashlib.sha256(prompt).hexdigest()}")]


async def test_agent_that_never_reads_stdin_does_not_block(spec: Callable[..., SpawnSpec]) -> None:
    proc = await AgentProcess.start(spec("crash.py", "exit", "0", stdin=b"x" * (4 * 1024 * 1024)))
    await collect(proc)
    assert await proc.wait() == 0


async def test_project_modules_do_not_shadow_the_watchdog(
    spec: Callable[..., SpawnSpec], tmp_path: Path
) -> None:
    # `python -m` puts its working folder first on sys.path; the agent's folder is a project.
    for name in ("json.py", "signal.py", "select.py", "ralph_lsp.py"):
        (tmp_path / name).write_text("raise SystemExit('shadowed')\n")
    env = dict(spec("crash.py").env, PYTHONPATH=str(tmp_path))
    proc = await AgentProcess.start(
        SpawnSpec([sys.executable, "-c", "print(1)"], tmp_path, env, None)
    )
    assert [line async for _, line in proc.lines()] == ["1"]
    assert await proc.wait() == 0


# -- errors the user can act on ----------------------------------------------------------------
async def test_missing_program_is_not_found(agent_env: dict[str, str], tmp_path: Path) -> None:
    env = dict(agent_env, PATH=str(tmp_path))
    with pytest.raises(AgentStartError) as caught:
        await AgentProcess.start(SpawnSpec(["claude", "-p", "hi"], tmp_path, env, None))
    err = caught.value
    assert err.kind == "not_found"
    assert "agent program 'claude' was not found on PATH" in str(err)
    assert str(tmp_path) in str(err)
    assert "ralph.agentCommand" in str(err)
    assert "npm install -g @anthropic-ai/claude-code" in str(err)


async def test_missing_path_is_not_found(agent_env: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(AgentStartError) as caught:
        await AgentProcess.start(SpawnSpec(["./bin/agent"], tmp_path, agent_env, None))
    assert caught.value.kind == "not_found"
    assert "ralph.agentCommand" in caught.value.message


def make_file(path: Path, text: str, mode: int) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.parametrize("how", ["on_path", "as_path"])
async def test_file_without_execute_bit_is_not_executable(
    agent_env: dict[str, str], tmp_path: Path, how: str
) -> None:
    make_file(tmp_path / "agent", "#!/bin/sh\necho hi\n", stat.S_IRUSR | stat.S_IWUSR)
    argv0 = "agent" if how == "on_path" else "./agent"
    env = dict(agent_env, PATH=str(tmp_path))
    with pytest.raises(AgentStartError) as caught:
        await AgentProcess.start(SpawnSpec([argv0], tmp_path, env, None))
    assert caught.value.kind == "not_executable"
    assert "chmod +x" in caught.value.message


@pytest.mark.parametrize("how", ["on_path", "as_path"])
async def test_directory_is_not_executable(
    agent_env: dict[str, str], tmp_path: Path, how: str
) -> None:
    (tmp_path / "agent").mkdir()
    argv0 = "agent" if how == "on_path" else str(tmp_path / "agent")
    env = dict(agent_env, PATH=str(tmp_path))
    with pytest.raises(AgentStartError) as caught:
        await AgentProcess.start(SpawnSpec([argv0], tmp_path, env, None))
    assert caught.value.kind == "not_executable"
    assert "directory" in caught.value.message


async def test_file_the_kernel_cannot_run(agent_env: dict[str, str], tmp_path: Path) -> None:
    make_file(tmp_path / "agent", "\x01\x02 not a program\n", 0o755)
    with pytest.raises(AgentStartError) as caught:
        await AgentProcess.start(SpawnSpec(["./agent"], tmp_path, agent_env, None))
    assert caught.value.kind == "not_executable"
    assert "'./agent'" in caught.value.message


async def test_missing_interpreter_is_not_found(agent_env: dict[str, str], tmp_path: Path) -> None:
    make_file(tmp_path / "agent", "#!/nonexistent/interpreter\n", 0o755)
    with pytest.raises(AgentStartError) as caught:
        await AgentProcess.start(SpawnSpec(["./agent"], tmp_path, agent_env, None))
    assert caught.value.kind == "not_found"
    assert "#!" in caught.value.message


async def test_missing_working_directory(agent_env: dict[str, str], tmp_path: Path) -> None:
    with pytest.raises(AgentStartError) as caught:
        await AgentProcess.start(
            SpawnSpec([sys.executable, "-c", "pass"], tmp_path / "gone", agent_env, None)
        )
    assert caught.value.kind == "os_error"
    assert "working directory" in caught.value.message


async def test_command_line_too_long(agent_env: dict[str, str], tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "pass", "x" * (200 * 1024)]  # one argument > MAX_ARG_STRLEN
    with pytest.raises(AgentStartError) as caught:
        await AgentProcess.start(SpawnSpec(argv, tmp_path, agent_env, None))
    assert caught.value.kind == "os_error"
    assert "{promptFile}" in caught.value.message


def test_resolve_program_follows_path_order(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    make_file(first / "agent", "", 0o644)  # not executable: skipped, as execvp skips it
    make_file(second / "agent", "#!/bin/sh\n", 0o755)
    assert resolve_program("agent", f"{first}:{second}", tmp_path) == str(second / "agent")
    assert resolve_program("agent", "b", tmp_path) == str(second / "agent")  # relative to cwd


async def test_a_wrapper_runs_the_resolved_program_under_it(tmp_path: Path) -> None:
    # SpawnSpec.wrapper (a sandbox's argv): the agent's program is found on the PATH it gets,
    # before the wrapper, and started after the wrapper's own arguments; the watchdog outside.
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    tool = tmp_path / "my-agent"
    tool.write_text('#!/bin/sh\necho "$WRAPPED $0 $1"\n')
    tool.chmod(0o755)
    wrapper = ("/usr/bin/env", "WRAPPED=inside")
    spec = SpawnSpec(["my-agent", "one"], tmp_path, env, None, wrapper=wrapper)
    proc = await AgentProcess.start(spec)
    assert await collect(proc) == [("stdout", f"inside {tool} one")]
    assert await proc.wait() == 0
