"""Ray is an optional extra, imported only when a run starts on a Ray runner (SPEC §9): the CLI,
the server, the runner and even the remote package itself never import it on their own."""

from __future__ import annotations

import subprocess
import sys


def test_nothing_imports_ray_unless_a_ray_run_starts() -> None:
    code = (
        "import sys\n"
        "import ralph_lsp.cli, ralph_lsp.cli.queue, ralph_lsp.cli.run, ralph_lsp.cli.run_control\n"
        "import ralph_lsp.server\n"
        "import ralph_lsp.runner.runs, ralph_lsp.runner.__main__, ralph_lsp.loop.queue\n"
        "import ralph_lsp.remote.ray_runs, ralph_lsp.remote.job\n"
        "from ralph_lsp.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
