"""One spawn of a run's agent: its prompt written where the agent reads it, its invocation
built from the settings, its process started (in the run's sandbox) and followed to its end.

``run.Run`` spawns through :func:`iterate` once per iteration (``plan_run.PlanRun`` too); the
reviewer's spawn (``review_round``) follows the same steps with the reviewer's invocation.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

from ralph_lsp.agents import build_invocation, verify_rules
from ralph_lsp.loop.iteration import AgentIteration, IterationOutcome
from ralph_lsp.loop.run_view import RunView as Run
from ralph_lsp.proc.process import AgentStartError, SpawnSpec
from ralph_lsp.runs.history import atomic_write_text, no_space


async def iterate(run: Run, n: int, prompt: str) -> IterationOutcome:
    """Iteration ``n``'s spawn of the agent on ``prompt``, written to its prompt file first."""
    prompt_file = run.history.prompt_file(n)
    temporary = False
    try:
        if prompt_file is None:
            raise OSError("history unavailable")
        prompt_file.write_text(prompt, encoding="utf-8")
    except OSError as exc:
        if prompt_file is not None and no_space(exc):  # the run ends after this iteration
            run.history.failed_write(exc)
        # No history folder: the prompt goes to a private temporary file, removed after;
        # sandboxed, in the run's own temporary folder (the only one the agent sees there).
        folder = None if run.sandbox is None else run.sandbox.box.policy.tmp_dir
        fd, name = tempfile.mkstemp(prefix="ralph-prompt-", suffix=".md", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(prompt)
        prompt_file, temporary = Path(name), True
    try:
        return await _spawn(run, n, prompt, prompt_file)
    finally:
        if temporary:
            with contextlib.suppress(OSError):
                prompt_file.unlink()


async def _spawn(run: Run, n: int, prompt: str, prompt_file: Path) -> IterationOutcome:
    s = run.settings
    try:
        inv = build_invocation(
            s.agent,
            list(s.agent_command) if s.agent_command else None,
            list(s.agent_args),
            prompt,
            prompt_file,
            python=sys.executable,
            cwd=run.work.root,
            # the checks the prompt asks for may run without asking (SPEC §4 v2)
            allowed_tools=[
                *verify_rules([c.line for c in run.verification.commands]),
                *s.allowed_tools,
            ],
            agent_user_config=s.agent_user_config,
            env={**os.environ, **s.env},
            sandboxed=run.sandbox is not None,
            model=run.choice.model,
        )
        for path, text in inv.files.items():  # the CLI's policy and defaults files
            Path(path).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write_text(Path(path), text)  # another run may read the same file
    except (ValueError, OSError) as exc:
        return IterationOutcome(start_error=AgentStartError("not_found", str(exc)))
    # the preset's (login, isolation, Gemini's defaults), then the user's own env setting
    env = {**os.environ, **inv.env, **s.env}
    spec = SpawnSpec(argv=inv.argv, cwd=run.work.root, env=env, stdin_data=inv.stdin_data)
    if run.sandbox is not None:
        spec = run.sandbox.agent(spec)
    run.history.open_iteration_log(n)
    iteration = AgentIteration(run, inv, spec, run.history.write_raw)
    return await iteration.run_as(run, "the agent", run.history.close_iteration_log)
