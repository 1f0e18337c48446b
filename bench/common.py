"""Shared helpers: paths, statistics, workspaces built from real tasks.md files, /proc readers."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus" / "openspec-tasks"
EXAMPLE = REPO / "examples" / "hello"
CACHE = REPO / ".cache"
PY = sys.executable

# Every process the bench starts carries this variable (the server passes its environment on
# to the agents), so leftovers can be found afterwards without guessing by name.
MARKER_VAR = "RALPH_BENCH_RUN"
MARKER = f"{os.getpid()}-{time.time_ns()}"

CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- statistics ------------------------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear between the closest ranks (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def rnd(value: float, digits: int = 2) -> float:
    return round(value, digits)


# -- environment -----------------------------------------------------------------------------
def bench_env(**extra: str) -> dict[str, str]:
    """The environment of every process the bench starts: ours, the marker, and ``extra``."""
    env = dict(os.environ)
    env[MARKER_VAR] = MARKER
    # Measure Python as installed programs run: bytecode cached (written on the warm-up runs).
    for name in ("PYTHONDEVMODE", "PYTHONDONTWRITEBYTECODE", "PYTHONPROFILEIMPORTTIME"):
        env.pop(name, None)
    env.update(extra)
    return env


# A memory file system, where there is one (Linux): see scratch(memory=True).
MEMORY_FS = Path("/dev/shm")


@contextlib.contextmanager
def scratch(prefix: str, *, memory: bool = False) -> Iterator[Path]:
    """A temporary folder, removed afterwards. ``memory``: on a memory file system when there
    is one, for a case that times its own saves (on the 2-core bench machine's ext4, mounted
    with ``discard``, an open with O_TRUNC or a rename over a file took 100-400 ms when other
    work wrote to the disk, with no server running: the bench's write, not the server)."""
    where = MEMORY_FS if memory and MEMORY_FS.is_dir() and os.access(MEMORY_FS, os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix=f"ralph-bench-{prefix}-", dir=where))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# -- real tasks.md files ---------------------------------------------------------------------
def _generated_tasks(i: int) -> bytes:
    """A tasks.md like the ones OpenSpec users write, for when the shared corpus is absent."""
    lines = [f"# Tasks for change {i}", ""]
    for story in range(1, 4 + i % 5):
        lines.append(f"## {story}. Story {story} of change {i}")
        lines.append("")
        for task in range(1, 3 + (i + story) % 7):
            box = "x" if (i + story + task) % 3 == 0 else " "
            lines.append(f"- [{box}] {story}.{task} Implement part {task} of story {story}")
            if task % 3 == 0:
                lines.append(f"  - [{box}] {story}.{task}.1 A nested step with `code` in it")
        lines.append("")
    return "\n".join(lines).encode()


def corpus_texts() -> tuple[list[bytes], str]:
    """Real tasks.md files (the shared corpus) and where they came from; generated if absent."""
    files = sorted(CORPUS.glob("*/tasks.md")) if CORPUS.is_dir() else []
    if files:
        return [f.read_bytes() for f in files], f"shared corpus ({len(files)} real tasks.md files)"
    return [_generated_tasks(i) for i in range(50)], "generated tasks.md files (no shared corpus)"


def make_workspace(root: Path, count: int, prefix: str = "change", first: int = 0) -> list[str]:
    """An OpenSpec project at ``root`` with ``count`` active changes, each with a real tasks.md.

    Each change also gets a small proposal.md, as ``openspec`` would create. Returns the names.
    ``first`` numbers the first change: a project grows by calling this again.
    """
    texts, _ = corpus_texts()
    changes = root / "openspec" / "changes"
    (changes / "archive").mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(first, first + count):
        name = f"{prefix}-{i:04d}"
        folder = changes / name
        folder.mkdir()
        (folder / "tasks.md").write_bytes(texts[i % len(texts)])
        (folder / "proposal.md").write_text(f"# {name}\n\n## Why\n\nBenchmark change {i}.\n")
        names.append(name)
    return names


def megabyte_of_tasks() -> str:
    """At least 1 MiB of real tasks.md text (the corpus repeated), cut at a line end."""
    texts, _ = corpus_texts()
    target = 1 << 20
    parts: list[bytes] = []
    size = 0
    i = 0
    while size < target:
        chunk = texts[i % len(texts)]
        if not chunk.endswith(b"\n"):
            chunk += b"\n"
        parts.append(chunk)
        size += len(chunk)
        i += 1
    data = b"".join(parts)
    cut = data.find(b"\n", target)
    return data[: cut + 1 if cut >= 0 else len(data)].decode("utf-8", "replace")


# -- /proc -----------------------------------------------------------------------------------
def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name may hold spaces and parentheses: split after the last ')'
    return raw[raw.rfind(")") + 2 :].split()


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of the process ``pid`` (all its threads), in seconds."""
    fields = _stat_fields(pid)
    if fields is None:
        raise ProcessLookupError(pid)
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """CPU seconds per thread of ``pid``, keyed ``"<tid> <name>"``."""
    out: dict[str, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            raw = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        name = "main" if int(tid) == pid else raw[raw.find("(") + 1 : raw.rfind(")")]
        fields = raw[raw.rfind(")") + 2 :].split()
        out[f"{tid} {name}"] = (int(fields[11]) + int(fields[12])) / CLK_TCK
    return out


def memory_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (peak RSS) of ``pid`` in MiB."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


def marked_processes() -> list[int]:
    """Live processes (other than this one) that carry this bench run's marker."""
    needle = f"{MARKER_VAR}={MARKER}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and alive(int(entry)):
            found.append(int(entry))
    return found


def kill_leftovers() -> list[str]:
    """SIGKILL every process this bench run started that is still alive; describe each."""
    described = []
    for pid in marked_processes():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            cmd = "?"
        described.append(f"{pid} {cmd.strip()[:120]}")
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return described


def load_average() -> float:
    return os.getloadavg()[0]
