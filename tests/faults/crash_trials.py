"""Seeded SIGKILLs of a run's host, and what must hold after each (SPEC §3, §9).

A trial starts a run of a fake agent that pauses and checks one task per iteration, over a
project with files of the user beside the change, then kills one host with SIGKILL at a moment
its seed picks:

- ``cli``: the foreground ``ralph-lsp run``;
- ``runner``: the runner of ``ralph-lsp run --detach``;
- ``server``: the language server, hosting the run itself or (half the seeds) following it in
  a runner of its own, which then goes on to the run's end.

Then it checks, as a user would meet the project next:

- no process of the run is left (every process the trial starts carries its tag);
- once the next reader has run (``ralph-lsp runs``), no live leftovers: no live file of the
  change, its claim free, the host's control socket gone, and the run ``interrupted`` (or
  ``succeeded`` with every task checked, when it ended before the kill or its runner went on);
- every history record is readable JSON, the run's iterations numbered 1..k;
- tasks.md differs from the original only inside checkbox boxes;
- every other file of the user is byte-identical;
- a re-run succeeds (every task checked, exit 0).

``make test`` runs a handful of seeds (tests/faults/test_crash_consistency.py); ``make soak``
runs ``python -m tests.faults.crash_trials 100`` and prints ``N trials, 0 inconsistent`` or
every failing seed with what failed (``--seed S`` repeats one).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ralph_lsp.runner.live import claim_held, find_live, live_path
from ralph_lsp.runs.history import load_records
from tests.faults.conftest import make_change, snapshot
from tests.faults.helpers import (
    TAG,
    FaultEnv,
    kill_tagged_for_good,
    tagged_processes,
)
from tests.faults.lsp_raw import RawLsp
from tests.tags import scratch

KINDS = ("cli", "runner", "server")
TASKS = "# Tasks\n\n" + "".join(
    f"## {s}. Story {s}\n" + "".join(f"- [ ] {s}.{t} Do thing {s}.{t}\n" for t in (1, 2, 3)) + "\n"
    for s in (1, 2, 3)
)
# The fault agent's own scratch file (its atomic save of tasks.md): the agent's, not ours.
AGENT_SCRATCH = ".tasks.md.fault-tmp"
BOX = re.compile(r"^(\s*[-*+] )\[[ xX]\]", re.M)


@dataclass(frozen=True)
class Plan:
    seed: int
    kind: str
    kill_after: float  # seconds after the host is up
    pause: float  # the agent's pause per iteration
    server_hosts: bool  # kind "server": the server hosts the run (else a runner does)

    @classmethod
    def of(cls, seed: int) -> Plan:
        rng = random.Random(seed)
        kind = KINDS[seed % len(KINDS)]
        return cls(seed, kind, rng.uniform(0.0, 2.5), rng.uniform(0.05, 0.3), rng.random() < 0.5)

    def __str__(self) -> str:
        host = f" ({'hosted' if self.server_hosts else 'runner'})" if self.kind == "server" else ""
        return f"seed {self.seed}: kill {self.kind}{host} after {self.kill_after:.2f}s"


def make_project(base: Path) -> FaultEnv:
    """A project with change ``alpha`` and files of the user, and a tagged environment."""
    root = base / "project"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("a project\n")
    (root / "src" / "main.py").write_text("print('hello')\n")
    (root / "notes.bin").write_bytes(bytes(range(256)) * 4)
    make_change(root, "alpha", TASKS)
    logs, tmp = scratch(root), base / "tmp"  # the agents' logs in the work tree they may write
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAULT_", "FAKE_AGENT"))}
    tag = uuid.uuid4().hex
    env.update({TAG: tag, "FAULT_LOG_DIR": str(logs), "TMPDIR": str(tmp), "PYTHONUNBUFFERED": "1"})
    return FaultEnv(root=root, logs=logs, tmp=tmp, env=env, tag=tag)


def run_trial(seed: int, base: Path) -> list[str]:
    """One seeded trial in the empty folder ``base``: what was found inconsistent."""
    plan = Plan.of(seed)
    fx = make_project(base)
    before = snapshot(fx.root)
    tasks = fx.tasks().read_text()
    try:
        sockets = _kill(plan, fx)
        return _check(plan, fx, before, tasks, sockets)
    finally:
        kill_tagged_for_good(fx.tag)


def _agent(fx: FaultEnv, pause: float) -> list[str]:
    return fx.agent("check-pause", f"{pause:.3f}")


def _kill(plan: Plan, fx: FaultEnv) -> list[str]:
    """Start the run, kill its host at the planned moment; the control sockets seen live."""
    agent = _agent(fx, plan.pause)
    if plan.kind == "cli":
        proc = fx.start_cli("alpha", "--agent-command", shlex.join(agent), "--verify-when", "off")
        time.sleep(plan.kill_after)
        sockets = [info.socket for info in find_live(fx.root)]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        return sockets
    if plan.kind == "runner":
        done = fx.ralph("run", "alpha", "--root", str(fx.root), "--detach",
                        "--agent-command", shlex.join(agent), "--verify-when", "off")  # fmt: skip
        if done.returncode != 0:
            raise AssertionError(f"run --detach failed: {done.stderr[-800:]}")
        [info] = find_live(fx.root)
        time.sleep(plan.kill_after)
        os.kill(info.pid, signal.SIGKILL)
        return [info.socket]
    settings = {
        "agent": "custom",
        "agentCommand": agent,
        "verifyWhen": "off",
        "runsOutliveEditor": not plan.server_hosts,
    }
    server = RawLsp(fx.root, fx.env, settings=settings, init_options=settings,
                    stderr_path=fx.logs / "server.stderr")  # fmt: skip
    try:
        # What is tried is the kill, not the start: a machine under other work took over 15 s
        # to answer initialize three times in a hundred trials.
        server.initialize(timeout=90)
        server.command("ralph.run", {"change": "alpha"}, timeout=60)
        time.sleep(plan.kill_after)
        sockets = [info.socket for info in find_live(fx.root)]
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait(10)
    finally:
        server.end()
    return sockets


def _check(
    plan: Plan, fx: FaultEnv, before: dict[str, str], tasks: str, sockets: list[str]
) -> list[str]:
    problems: list[str] = []
    # A runner the killed server only followed goes on to the run's end, then leaves.
    wait = 60.0 if plan.kind == "server" and not plan.server_hosts else 3.0
    left = _gone_within(fx.tag, wait)
    if left:
        problems.append(f"processes of the run left {wait:.0f}s after the kill: {left}")
        kill_tagged_for_good(fx.tag)
    reader = fx.ralph("runs", "--root", str(fx.root))
    if reader.returncode != 0:
        problems.append(f"`ralph-lsp runs` exited {reader.returncode}: {reader.stderr[-500:]}")
    problems += _live_leftovers(fx, sockets)
    problems += _history(fx)
    problems += _user_files(fx, before, tasks)
    problems += _rerun(fx)
    return problems


def _gone_within(tag: str, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := tagged_processes(tag)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


def _live_leftovers(fx: FaultEnv, sockets: list[str]) -> list[str]:
    problems = []
    if live_path(fx.root, "alpha").exists():
        problems.append("the live file of alpha is left after a reader ran")
    if find_live(fx.root):
        problems.append(f"a live run is still listed: {find_live(fx.root)}")
    if claim_held(fx.root, "alpha"):
        problems.append("the claim of alpha is still held")
    problems += [f"the control socket {s} is left" for s in sockets if os.path.exists(s)]
    return problems


def _history(fx: FaultEnv) -> list[str]:
    problems = []
    for path in sorted((fx.root / ".ralph" / "runs").glob("*/record.json")):
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{path.parent.name}/record.json unreadable: {exc}")
    done = "- [ ]" not in fx.tasks().read_text()
    for record in load_records(fx.root, "alpha"):
        # Cut short: interrupted; or it had ended (or its runner went on) with every task done.
        if record.get("state") not in ("interrupted", "succeeded" if done else "interrupted"):
            problems.append(f"run {record['runId']} is {record.get('state')!r} after a reader ran")
        numbers = [it.get("n") for it in record.get("iterations") or []]
        if numbers != list(range(1, len(numbers) + 1)):
            problems.append(f"run {record['runId']} has iterations {numbers}")
    return problems


def _user_files(fx: FaultEnv, before: dict[str, str], tasks: str) -> list[str]:
    problems = []
    now = fx.tasks().read_text()
    if BOX.sub(r"\1[ ]", now) != BOX.sub(r"\1[ ]", tasks):
        problems.append(f"tasks.md changed outside its boxes:\n{now}")
    after = {k: v for k, v in snapshot(fx.root).items() if Path(k).name != AGENT_SCRATCH}
    if after != before:
        changed = sorted(set(after.items()) ^ set(before.items()))
        problems.append(f"files of the user changed: {changed}")
    return problems


def _rerun(fx: FaultEnv) -> list[str]:
    every = fx.agent_command("check-every")
    again = fx.ralph("run", "alpha", "--root", str(fx.root), "--agent-command", every,
                     "--verify-when", "off", timeout=120)  # fmt: skip
    problems = []
    if again.returncode != 0:
        problems.append(f"the re-run exited {again.returncode}: {again.stdout[-600:]}")
    elif "- [ ]" in fx.tasks().read_text():
        problems.append("the re-run succeeded with a task unchecked")
    left = _gone_within(fx.tag, 3.0)
    if left:
        problems.append(f"processes left after the re-run: {left}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.faults.crash_trials", description=__doc__)
    p.add_argument("trials", type=int, nargs="?", default=100)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--seed", type=int, help="run this one seed only")
    args = p.parse_args(argv)
    seeds = (
        [args.seed]
        if args.seed is not None
        else range(args.first_seed, args.first_seed + args.trials)
    )
    failed: list[tuple[Plan, list[str]]] = []
    started = time.monotonic()
    for seed in seeds:
        base = Path(tempfile.mkdtemp(prefix=f"ralph-soak-{seed}-"))
        try:
            problems = run_trial(seed, base)
        except Exception as exc:  # a trial that could not even run is a failure too
            problems = [f"the trial broke: {type(exc).__name__}: {exc}"]
        if problems:
            failed.append((Plan.of(seed), problems))
            print(f"{Plan.of(seed)}: INCONSISTENT", *problems, sep="\n  ", flush=True)
        else:
            shutil.rmtree(base, ignore_errors=True)
            print(f"{Plan.of(seed)}: ok", flush=True)
    n = len(seeds)
    print(f"{n} trials, {len(failed)} inconsistent ({time.monotonic() - started:.0f} s)")
    for plan, _ in failed:
        print(f"  failed: {plan} (python -m tests.faults.crash_trials --seed {plan.seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
