"""A real single-node Ray cluster on 127.0.0.1 only (../shared/notes/ray-offline.md), for the
tests (conftest's session fixture) and the bench (``bench/ray_cases.py``).

Its own HOME (with ``ray_bootstrap_config.yaml`` naming a local provider, so no cloud metadata
probe), usage reports off and their URL on a closed loopback port, every address on 127.0.0.1
(checked: :func:`local_cluster` fails when a node's ``node_ip`` is anything else), the jobs'
temp folders inside its own folder. The head runs in its own process group and is ended by that
group, never by ``ray stop`` (which ends every Ray process of the machine).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports: every socket is held until all are bound, so the
    kernel cannot hand the same port out twice (binding and closing one at a time, it did: Ray
    then refused to start, "dashboard is trying to use a port number … used by other
    components")."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            s = stack.enter_context(socket.socket())
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
        return ports


def cluster_env(home: Path, closed: int) -> dict[str, str]:
    env = dict(os.environ)
    # A job's run on its worker is sandboxed as a user's would be (SPEC §10), whatever the
    # test process itself runs with (a test may be marked unsandboxed, tests/conftest.py).
    env.pop("RALPH_SANDBOX", None)
    env.update(
        HOME=str(home),
        RAY_USAGE_STATS_ENABLED="0",
        # Without it Ray turns 127.0.0.1 into the machine's routable address (its
        # resolve_ip_for_localhost); off, every node address it picks is loopback.
        RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
        RAY_USAGE_STATS_REPORT_URL=f"http://127.0.0.1:{closed}/usage",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        RALPH_REMOTE_POLL_SECONDS="0.5",
        RAY_JOB_STOP_WAIT_TIME_S="10",
        # The jobs' temp folders (a job's clone) inside the cluster's own folder, removed with
        # it: a runner killed by a test cannot remove its clone itself.
        TMPDIR=str(home / "tmp"),
    )
    return env


def wait_dashboard(url: str, proc: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None and proc.returncode != 0:
            raise RuntimeError(f"ray start exited {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/api/version", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError("the Ray dashboard did not come up")


def node_ips(url: str) -> list[str]:
    from ray.util.state import list_nodes

    return [str(n.node_ip) for n in list_nodes(address=url)]


def wait_jobs(url: str, timeout: float = 120.0) -> None:
    """Until the Jobs API runs a job. It takes one only once the head's dashboard agent has
    registered, which can be well after the dashboard answers and the node is listed (seen here
    on a loaded machine: a submit ~20 s after the dashboard was up still got Ray's 500 "No
    available agent to submit job"). A first trivial job, its submit retried until the agent is
    there, run to its end; it also warms up what every later job starts with."""
    from ray.job_submission import JobStatus, JobSubmissionClient

    deadline = time.monotonic() + timeout
    client = JobSubmissionClient(url)
    while True:
        try:
            job = client.submit_job(entrypoint="true")
            break
        except Exception as exc:  # RuntimeError from the SDK for Ray's 500
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Jobs API took no job: {exc}") from None
            time.sleep(1)
    while (status := client.get_job_status(job)) not in (
        JobStatus.SUCCEEDED,
        JobStatus.FAILED,
        JobStatus.STOPPED,
    ):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the first job did not end: {status}")
        time.sleep(0.5)
    if status != JobStatus.SUCCEEDED:
        raise RuntimeError(f"the first job ended {status}: {client.get_job_logs(job)[-2000:]}")


@contextlib.contextmanager
def local_cluster() -> Iterator[str]:
    """The head's dashboard URL (the Jobs API address) while the cluster runs."""
    # Ray's sockets live under its temp dir, and a Unix socket's path holds at most 107 bytes:
    # a short folder of its own, removed at the end.
    home = Path(tempfile.mkdtemp(prefix="rayh"))
    (home / "ray_bootstrap_config.yaml").write_text("provider: {type: local}\n")
    (home / "tmp").mkdir()
    # Every port below distinct: the usage note's (nothing listens there, it goes nowhere),
    # the dashboard's, the GCS's, and the seven options after them.
    closed, dash, gcs, *others = free_ports(10)
    env = cluster_env(home, closed)
    ray = str(Path(sys.executable).parent / "ray")
    argv = [ray, "start", "--head", "--block", "--disable-usage-stats"]
    argv += ["--node-ip-address", "127.0.0.1", "--dashboard-host", "127.0.0.1"]
    argv += ["--dashboard-port", str(dash), "--port", str(gcs), "--num-cpus", "4"]
    argv += ["--temp-dir", str(home / "t"), "--include-dashboard", "true"]
    # Every port Ray would otherwise take at a fixed default (the dashboard agent's 52365, the
    # client server's 10001, …): another cluster on the machine (another worktree's tests) holds
    # them, and then this head's dashboard agent does not start and the Jobs API refuses every
    # job ("No available agent to submit job").
    options = (
        "--ray-client-server-port",
        "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port",
        "--runtime-env-agent-port",
        "--metrics-export-port",
        "--node-manager-port",
        "--object-manager-port",
    )
    for option, port in zip(options, others, strict=True):
        argv += [option, str(port)]
    log = open(home / "ray-start.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=home
    )
    url = f"http://127.0.0.1:{dash}"
    try:
        t0 = time.monotonic()
        try:
            wait_dashboard(url, proc)
        except RuntimeError as exc:
            log.flush()
            tail = (home / "ray-start.log").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{exc}\n{tail}") from None
        _say(f"dashboard up after {time.monotonic() - t0:.1f} s")
        ips: list[str] = []
        for _ in range(60):  # the head registers its node a moment after the dashboard is up
            ips = node_ips(url)
            if ips:
                break
            time.sleep(0.5)
        if not ips or any(ip != "127.0.0.1" for ip in ips):
            raise RuntimeError(f"a node left loopback: {ips}")
        _say(f"node on 127.0.0.1 after {time.monotonic() - t0:.1f} s")
        wait_jobs(url)
        _say(f"a first job ran after {time.monotonic() - t0:.1f} s")
        os.environ.update({k: env[k] for k in ("RALPH_REMOTE_POLL_SECONDS",)})
        yield url
    finally:
        _end(proc)
        _kill_leftovers(home)
        log.close()
        shutil.rmtree(home, ignore_errors=True)


def _say(text: str) -> None:
    """Progress on stderr (pytest keeps it with a failure; the e2e keeps it in its results)."""
    print(f"[ray cluster] {text}", file=sys.stderr, flush=True)


def _end(proc: subprocess.Popen[bytes], grace: float = 3.0) -> None:
    """SIGTERM to the head's process group and to each of its descendants (Ray starts some,
    the GCS and the raylet among them, in groups of their own); SIGKILL to whatever is left once
    they have ended or after ``grace``. ``ray start --block``, the GCS and the raylet outlive a
    SIGTERM here (measured: still there after 20 s), so waiting longer only costs time."""
    import psutil

    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        kids = []
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    for kid in kids:
        with contextlib.suppress(psutil.Error):
            kid.terminate()
    _, alive = psutil.wait_procs(kids, timeout=grace)
    for kid in alive:
        with contextlib.suppress(psutil.Error):
            kid.kill()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def _kill_leftovers(home: Path) -> None:
    """Ray's own processes of this cluster only (they run with its HOME), by pid."""
    import psutil

    for p in psutil.process_iter(["pid", "environ"]):
        try:
            if (p.info["environ"] or {}).get("HOME") == str(home):
                p.kill()
        except (psutil.Error, OSError):
            continue


def serve() -> int:
    """``python -m tests.ray.cluster serve``: a cluster for another program (the TypeScript e2e).

    Starts :func:`local_cluster`, prints one JSON line ``{"address": URL}`` on stdout, and ends
    the cluster when stdin closes (its user went away, however it ended) or on SIGTERM/SIGINT,
    also while it is still starting. Everything else it prints goes to stderr."""
    out = sys.stdout
    sys.stdout = sys.stderr  # Ray's own chatter must not land on the line a program reads

    def stop(signum: int, _frame: object) -> None:
        # Once: a second signal must not cut the cluster's end short.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise _Stop(signum)

    def watch_stdin() -> None:
        # The raw descriptor, not sys.stdin: a daemon thread blocked in a buffered read holds
        # its lock, and the interpreter aborts on that lock at exit.
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        with contextlib.suppress(ProcessLookupError):
            os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=watch_stdin, name="stdin", daemon=True).start()
    try:
        with local_cluster() as url:
            out.write(json.dumps({"address": url}) + "\n")
            out.flush()
            while True:
                signal.pause()  # until a signal (or stdin's end) raises _Stop
    except _Stop as why:
        print(f"cluster ended ({signal.Signals(why.args[0]).name})", file=sys.stderr)
    return 0


class _Stop(BaseException):
    """Raised in the main thread by SIGTERM/SIGINT (or stdin's end): unwinds local_cluster."""


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        print("usage: python -m tests.ray.cluster serve", file=sys.stderr)
        sys.exit(2)
    sys.exit(serve())
