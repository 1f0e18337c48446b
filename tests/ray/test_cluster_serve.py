"""``python -m tests.ray.cluster serve``, the cluster the TypeScript e2e starts: one JSON line with
a loopback address whose Jobs API answers, and the whole cluster gone once its stdin closes or it
gets SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.ray.cluster import node_ips

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def start() -> tuple[subprocess.Popen[bytes], str, list[psutil.Process]]:
    """The serving process, its address, and every process it started (read once it is up)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.ray.cluster", "serve"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stdout = proc.stdout
    assert stdout is not None
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(120)
    if not got or not got[0]:
        proc.kill()
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"no address line; stderr: {err.decode(errors='replace')[-3000:]}")
    line = json.loads(got[0])
    assert set(line) == {"address"}, line
    address = str(line["address"])
    return proc, address, psutil.Process(proc.pid).children(recursive=True)


def answers(address: str) -> bool:
    try:
        with urllib.request.urlopen(address + "/api/version", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def check_up(address: str, ray_processes: list[psutil.Process]) -> None:
    assert address.startswith("http://127.0.0.1:"), address
    assert answers(address), "the Jobs API answers"
    assert node_ips(address) == ["127.0.0.1"]
    # Announced only once the Jobs API runs jobs (its first one has run), not merely answers.
    from ray.job_submission import JobStatus, JobSubmissionClient

    jobs = JobSubmissionClient(address).list_jobs()
    assert [j.status for j in jobs] == [JobStatus.SUCCEEDED], jobs
    assert len(ray_processes) >= 3, "ray start, its GCS and raylet at least"


def check_gone(
    proc: subprocess.Popen[bytes], address: str, ray_processes: list[psutil.Process]
) -> None:
    assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
    _, alive = psutil.wait_procs(ray_processes, timeout=10)
    assert alive == [], f"left running: {[p.pid for p in alive]}"
    assert not answers(address)


def test_serve_prints_a_loopback_address_and_ends_the_cluster_when_stdin_closes() -> None:
    proc, address, ray_processes = start()
    try:
        check_up(address, ray_processes)
        assert proc.stdin is not None
        proc.stdin.close()
        check_gone(proc, address, ray_processes)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)


def test_serve_ends_the_cluster_on_sigterm() -> None:
    proc, address, ray_processes = start()
    try:
        check_up(address, ray_processes)
        proc.send_signal(signal.SIGTERM)
        check_gone(proc, address, ray_processes)
        assert b"cluster ended (SIGTERM)" in (proc.stderr.read() if proc.stderr else b"")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(60)
