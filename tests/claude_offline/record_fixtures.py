"""Re-record tests/fixtures/claude_real/ from the real Claude Code CLI and the scripted server.

    .venv/bin/python tests/claude_offline/record_fixtures.py [SCENARIO ...]

Installs the CLI first (tests/claude_offline/install_claude.sh). For each scenario of
`harness.SCENARIOS` it runs `claude -p … --output-format stream-json --verbose --permission-mode
acceptEdits --allowedTools "Edit Write Read Bash"` in a fresh project with a 3-task change and
writes NAME.jsonl (stdout, normalised), NAME.rc (the exit code) and NAME.stderr.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from claude_offline.harness import (  # noqa: E402
    FIXTURES,
    SCENARIOS,
    normalize,
    offline_env,
    ralph_like_prompt,
    run_claude,
)
from claude_offline.scripted_server import ScriptedModel  # noqa: E402


def make_project(base: Path) -> tuple[Path, Path, Path]:
    """(project, home, change folder) under base, with a 3-task change named `demo`."""
    project, home = base / "project", base / "home"
    folder = project / "openspec" / "changes" / "demo"
    folder.mkdir(parents=True)
    home.mkdir()
    (folder / "tasks.md").write_text(
        "## 1. Scripted work\n\n"
        "- [ ] 1.1 Scripted task number 1\n"
        "- [ ] 1.2 Scripted task number 2\n"
        "- [ ] 1.3 Scripted task number 3\n",
        encoding="utf-8",
    )
    return project, home, folder


def record(name: str, claude_bin: Path) -> None:
    sc = SCENARIOS[name]
    with tempfile.TemporaryDirectory(prefix="claude-rec-") as tmp:
        project, home, folder = make_project(Path(tmp).resolve())
        with ScriptedModel(sc.mode, fail_count=sc.fail_count, retry_after=sc.retry_after) as srv:
            env = offline_env(claude_bin, srv.url, home, retries=sc.retries)
            if not sc.api_key:
                del env["ANTHROPIC_API_KEY"]
            run = run_claude(claude_bin, project, ralph_like_prompt(folder), env, timeout=300)
        FIXTURES.mkdir(parents=True, exist_ok=True)
        norm = lambda s: normalize(s, project=project, home=home)  # noqa: E731
        (FIXTURES / f"{name}.jsonl").write_text(norm(run.stdout), encoding="utf-8")
        (FIXTURES / f"{name}.rc").write_text(f"{run.returncode}\n", encoding="utf-8")
        (FIXTURES / f"{name}.stderr").write_text(norm(run.stderr), encoding="utf-8")
        print(f"{name}: exit {run.returncode}, {run.seconds:.2f}s, {len(run.events)} events")


def main() -> None:
    names = sys.argv[1:] or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        sys.exit(f"unknown scenario(s) {unknown} (known: {', '.join(SCENARIOS)})")
    out = subprocess.run(
        ["bash", str(Path(__file__).with_name("install_claude.sh"))],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout
    claude_bin = Path(out.strip().splitlines()[-1])
    for name in names:
        record(name, claude_bin)


if __name__ == "__main__":
    main()
