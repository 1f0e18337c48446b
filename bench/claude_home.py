"""The real Claude Code CLI offline (tests/claude_offline): what a heavy user home adds to the
requests of a `ralph-lsp run` (agentUserConfig isolate, the default) against an empty home."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from bench.common import rnd
from bench.report import Results

REPO = Path(__file__).resolve().parent.parent


def _claude_bin() -> Path:
    script = REPO / "tests" / "claude_offline" / "install_claude.sh"
    out = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, check=True, timeout=900
    )
    return Path(out.stdout.strip().splitlines()[-1])


def _run_bytes(claude: Path, base: Path, heavy: bool, extra: list[str]) -> tuple[int, int]:
    """(request bytes, exit code) of one 3-task `ralph-lsp run` with this home."""
    from tests.claude_offline.heavy_home import build_heavy_home
    from tests.claude_offline.scripted_server import ScriptedModel
    from tests.claude_offline.test_real_claude import _project, ralph_run

    base.mkdir()
    change = _project(base)
    if heavy:
        (base / "agent-home").mkdir()
        build_heavy_home(base / "agent-home", change.root)
    with ScriptedModel() as server:
        run = ralph_run(claude, server, change, base, extra=extra)
        posted = sum(r.size for r in server.requests if r.method == "POST" and r.n_tools)
    return posted, run.returncode


def heavy_vs_clean(results: Results) -> None:
    """One run each: an empty home, a heavy home (isolate), the heavy home with inherit."""
    claude = _claude_bin()
    with tempfile.TemporaryDirectory(prefix="bench-claude-home-") as tmp:
        clean, rc_clean = _run_bytes(claude, Path(tmp) / "clean", False, [])
        heavy, rc_heavy = _run_bytes(claude, Path(tmp) / "heavy", True, [])
        inherit, rc_inherit = _run_bytes(
            claude, Path(tmp) / "inherit", True, ["--agent-user-config", "inherit"]
        )
    results.put("claude_iteration_bytes_heavy_vs_clean", rnd(heavy / clean, 3), 1)
    results.details["claude_iteration_bytes"] = {
        "clean": clean,
        "heavy_isolate": heavy,
        "heavy_inherit": inherit,
        "heavy_inherit_vs_clean": rnd(inherit / clean, 3),
        "exit_codes": [rc_clean, rc_heavy, rc_inherit],
        "run": "ralph-lsp run of a 3-task change, real claude CLI against the scripted model",
    }
