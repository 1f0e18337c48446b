"""The code that attrs and dataclasses generate for each class, compiled once per machine.

attrs and dataclasses write each class's ``__init__``, ``__repr__``, ``__eq__`` … as source
text and compile it while the class is made, on every start of every process: importing
lsprotocol (pygls's types: about 570 attrs classes) compiles about 760 such scripts, and the
server's own dataclasses nearly 300 more; a third of the server's start (issue 46's attach
latency and 10,000-change start).

:func:`install`, called before those imports, gives ``attr._make`` and ``dataclasses`` a
``compile``/``exec`` of their own that looks each script up by its whole text, its file name
and the compiler flags its caller's module has (attrs compiles under ``from __future__ import
annotations``), in a cache read from ``$XDG_CACHE_HOME/ralph-lsp/`` (``~/.cache/ralph-lsp/``),
one file per interpreter build. :func:`save`, once the imports are done,
writes what this start used back when it compiled more than a few scripts anew (a first start,
an upgrade), atomically, and takes the shadows away: later classes compile as before.

Why a hit is safe: a script is matched by its whole text, so a hit is the code ``compile``
makes of that text. The cache holds code, so it is read only when it is a regular file (not
through a link) owned by this user and writable by no one else, as a ``__pycache__`` file is
trusted; anything else is ignored and, on save, replaced. A sandboxed agent cannot write it
(the home is read-only in the sandbox). ``RALPH_LSP_CODE_CACHE=off`` turns it all off.
Standard library only, and the product's regular-file opener; no LSP imports.
"""

import __future__

import builtins
import marshal
import os
import stat
import sys
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from ralph_lsp.openspec.regular_files import open_regular

#: A cache file larger than this is not read.
MAX_BYTES = 16 * 1024 * 1024
#: Fewer scripts than this compiled anew do not rewrite the cache (attrs writes one script with
#: a per-process hash in it, new on every start).
SAVE_AFTER = 8
_REAL_COMPILE = builtins.compile
_REAL_EXEC = builtins.exec

Key = tuple[int, str, str]  # (compiler flags, file name, source)


class _Cache:
    def __init__(self, path: Path, known: dict[Key, CodeType]) -> None:
        self.path = path
        self.known = known
        self.used: dict[Key, CodeType] = {}
        self.compiled = 0
        self.patched: list[tuple[ModuleType, str]] = []

    def code(self, source: str, filename: str, flags: int) -> CodeType:
        key = (flags, filename, source)
        # two classes may make the same script (the same fields): compiled once a start too
        code = self.used.get(key) or self.known.get(key)
        if code is None:
            code = _REAL_COMPILE(source, filename, "exec", flags, True)
            self.compiled += 1
        self.used[key] = code
        return code


_ACTIVE: _Cache | None = None


def cache_path(env: dict[str, str] | None = None) -> Path | None:
    """Where this interpreter's cache is, or None when there is no cache folder to use."""
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CACHE_HOME") or ""
    if not base or not os.path.isabs(base):
        home = env.get("HOME") or ""
        if not home or not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    # the interpreter's own build: marshal's format and the bytecode are its (a script's code
    # does not depend on the attrs that wrote it: the key is the script itself)
    tag = f"{sys.implementation.cache_tag}-{sys.hexversion:x}"
    return Path(base) / "ralph-lsp" / f"generated-code-{tag}.marshal"


def _read(path: Path) -> dict[Key, CodeType]:
    """The cache's entries; empty when it is missing, not this user's own, writable by others,
    a link, too large or not a cache."""
    try:  # the product's one way to open a file it did not just make: regular, capped, no link
        fd = open_regular(path, MAX_BYTES, follow=False)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return {}
        raw = os.read(fd, st.st_size + 1)  # at once: marshal.load reads a file piecemeal
        data = marshal.loads(raw) if len(raw) == st.st_size else None
    except Exception:  # (a truncated or foreign file is no cache)
        return {}
    finally:
        os.close(fd)
    if not isinstance(data, dict):
        return {}
    return {
        k: v
        for k, v in data.items()
        if isinstance(k, tuple)
        and len(k) == 3
        and isinstance(k[0], int)
        and isinstance(k[1], str)
        and isinstance(k[2], str)
        and isinstance(v, CodeType)
    }


def _future_flags(module: ModuleType) -> int:
    """The compiler flags of the ``from __future__`` imports of ``module``: what ``compile`` and
    ``exec`` called from it inherit."""
    flags = 0
    for name in __future__.all_feature_names:
        feature: __future__._Feature = getattr(__future__, name)
        if getattr(module, name, None) is feature:
            flags |= feature.compiler_flag
    return flags


def _compile_for(cache: _Cache, flags: int) -> Any:
    def compile(source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or mode != "exec" or type(source) is not str or type(filename) is not str:
            if not args and not kwargs:
                return _REAL_COMPILE(source, filename, mode, flags, True)
            return _REAL_COMPILE(source, filename, mode, *args, **kwargs)
        return cache.code(source, filename, flags)

    return compile


def _exec_for(cache: _Cache, flags: int) -> Any:
    def exec(source: Any, /, *args: Any, **kwargs: Any) -> Any:
        if type(source) is str:
            source = cache.code(source, "<string>", flags)
        return _REAL_EXEC(source, *args, **kwargs)

    return exec


def install(env: dict[str, str] | None = None) -> None:
    """Shadow ``compile`` in ``attr._make`` and ``exec`` in ``dataclasses`` with the cached
    ones, until :func:`save`. Does nothing when turned off, already installed, or without a
    cache folder; never raises."""
    global _ACTIVE
    env = dict(os.environ) if env is None else env
    if _ACTIVE is not None or env.get("RALPH_LSP_CODE_CACHE", "").lower() in ("off", "0"):
        return
    try:
        path = cache_path(env)
        if path is None:
            return
        cache = _Cache(path, _read(path))
        import dataclasses

        targets: list[tuple[ModuleType, str, Any]] = [
            (dataclasses, "exec", _exec_for(cache, _future_flags(dataclasses)))
        ]
        try:
            import attr._make as attrs_make
        except ImportError:
            pass
        else:
            targets.append((attrs_make, "compile", _compile_for(cache, _future_flags(attrs_make))))
        for module, name, shadow in targets:
            if name not in vars(module):  # never replace a name the module defines itself
                setattr(module, name, shadow)
                cache.patched.append((module, name))
        _ACTIVE = cache
    except Exception:  # (a start without the cache is a start)
        _ACTIVE = None


def stats() -> tuple[int, int]:
    """(scripts found in the cache, scripts compiled) since :func:`install`."""
    if _ACTIVE is None:
        return 0, 0
    return len(_ACTIVE.used) - _ACTIVE.compiled, _ACTIVE.compiled


def save() -> None:
    """Take the shadows away and, when this start compiled more than :data:`SAVE_AFTER`
    scripts anew, write what it used to the cache (the folder made private, the file
    written beside it and renamed over it). Never raises."""
    global _ACTIVE
    cache, _ACTIVE = _ACTIVE, None
    if cache is None:
        return
    for module, name in cache.patched:
        vars(module).pop(name, None)
    if cache.compiled <= SAVE_AFTER:
        return
    import tempfile  # (not at start: it costs a start 8 ms)

    try:
        cache.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".generated-", dir=cache.path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                marshal.dump(cache.used, f)
            os.replace(tmp, cache.path)
        except BaseException:
            os.unlink(tmp)
            raise
    except Exception:  # (a read-only home: the next start compiles again, as now)
        return
