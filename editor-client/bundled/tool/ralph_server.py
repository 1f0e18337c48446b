"""Starts the ralph-lsp language server for the VS Code extension.

Run as ``python <this file>`` (never ``-m`` and never from the workspace): Python then puts this
file's folder first on ``sys.path``, not the working folder, so no file of the workspace is ever
imported. The server comes from ``../libs`` (the copy bundled in the platform ``.vsix``) or, with
``RALPH_IMPORT_STRATEGY=fromEnvironment``, from the interpreter's own environment when ralph-lsp is
installed there (the bundled copy otherwise).

``--check`` imports the server and prints one JSON line: its version, where it came from and its
location; exit 3 when Python is too old, 4 when there is no server to run.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS = os.path.join(os.path.dirname(HERE), "libs")
STRATEGIES = ("useBundled", "fromEnvironment")


def _too_old() -> bool:
    if sys.version_info >= (3, 10):
        return False
    version = ".".join(str(n) for n in sys.version_info[:3])
    sys.stderr.write(
        f"ralph-lsp needs Python 3.10 or newer; {sys.executable} is Python {version}."
        ' Set "ralph.server.pythonPath" to a newer interpreter.\n'
    )
    return True


def _installed() -> bool:
    """Whether this interpreter's environment has ralph_lsp (the bundled folder not counted)."""
    import importlib.util

    return importlib.util.find_spec("ralph_lsp") is not None


def choose(strategy: str) -> str:
    """Puts the chosen server first on sys.path; says where it comes from."""
    # No working-folder entry, whatever started us (a `python -c` or an embedding would add "").
    sys.path[:] = [p for p in sys.path if p not in ("", ".")]
    bundled = os.path.isdir(os.path.join(LIBS, "ralph_lsp"))
    if strategy == "fromEnvironment" and _installed():
        return "environment"
    if bundled:
        sys.path.insert(0, LIBS)
        return "bundled"
    return "environment"  # a build without the bundle: the interpreter's own, if any


def main() -> int:
    if _too_old():
        return 3
    strategy = os.environ.get("RALPH_IMPORT_STRATEGY", "useBundled")
    if strategy not in STRATEGIES:
        strategy = "useBundled"
    source = choose(strategy)
    try:
        import ralph_lsp
    except ModuleNotFoundError as exc:
        sys.stderr.write(f"No module named ralph_lsp: {exc}\n")
        return 4
    if sys.argv[1:] == ["--check"]:
        import json

        version = getattr(ralph_lsp, "__version__", "?")
        where = os.path.dirname(os.path.abspath(ralph_lsp.__file__ or ""))
        print(json.dumps({"version": version, "source": source, "location": where}))
        return 0
    import runpy

    sys.argv[1:] = []
    runpy.run_module("ralph_lsp", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
