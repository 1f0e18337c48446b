"""ralph-lsp benchmarks: ``python -m bench`` (``make bench``).

Every number comes from the real thing: the server started as ``python -m ralph_lsp`` and driven
by a pygls ``LanguageClient`` that announces VS Code's capabilities, real files on disk, real
agent processes, and the real OpenSpec CLI. Results go to ``bench/results.json``; what each row
measures is described in ``docs/benchmarks.md``. Nothing here is part of ``make test``.
"""
