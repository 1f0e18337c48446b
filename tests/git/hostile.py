"""A stranger's repository: every key of its ``.git/config`` that names a program names a canary.

Each canary is a tiny shell script that leaves a file in the test's own ``canaries`` folder when
it runs (and fails, so nothing waits on it). Nothing outside the test's folders is looked at.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import copy_example
from tests.git.conftest import git, init_repo

CHANGE = "add-greeting-cli"

# Every hook git knows (githooks(5)); they all point at a canary through core.hooksPath, and
# the repository's own .git/hooks holds them too.
HOOKS = [
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
]


class Canaries:
    def __init__(self, base: Path) -> None:
        self.folder = base / "canaries"
        self.bin = base / "canary-bin"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.bin.mkdir(parents=True, exist_ok=True)

    def program(self, name: str) -> str:
        path = self.bin / name
        path.write_text(f'#!/bin/sh\n: > "{self.folder}/{name}.$$"\nexit 1\n')
        path.chmod(0o755)
        return str(path)

    def hooks(self, name: str = "hooks") -> Path:
        folder = self.bin / name
        folder.mkdir(exist_ok=True)
        for hook in HOOKS:
            path = folder / hook
            path.write_text(f'#!/bin/sh\n: > "{self.folder}/hook-{hook}.$$"\nexit 1\n')
            path.chmod(0o755)
        return folder

    def clear(self) -> None:
        for path in self.folder.iterdir():
            path.unlink()

    def hits(self) -> list[str]:
        return sorted(p.name for p in self.folder.iterdir())


def arm(repo: Path, canaries: Canaries) -> None:
    """Name a canary in every key of ``repo``'s config that runs a program (git help config)."""
    (repo / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    git(repo, "add", ".gitattributes")  # committed: a worktree made from HEAD has it too
    git(repo, "commit", "-q", "-m", "attributes")
    settings = {
        "filter.evil.clean": canaries.program("filter-clean"),
        "filter.evil.smudge": canaries.program("filter-smudge"),
        "filter.evil.process": canaries.program("filter-process"),
        "filter.evil.required": "true",
        "diff.evil.textconv": canaries.program("textconv"),
        "diff.evil.command": canaries.program("diff-command"),
        "merge.evil.driver": canaries.program("merge-driver"),
        "diff.external": canaries.program("diff-external"),
        "core.fsmonitor": canaries.program("fsmonitor"),
        "core.hooksPath": str(canaries.hooks()),
        "core.pager": canaries.program("core-pager"),
        "pager.diff": canaries.program("pager-diff"),
        "core.sshCommand": canaries.program("ssh-command"),
        "core.askPass": canaries.program("askpass"),
        "credential.helper": "!" + canaries.program("credential-helper"),
        "core.alternateRefsCommand": canaries.program("alternate-refs"),
        "core.editor": canaries.program("editor"),
        "sequence.editor": canaries.program("sequence-editor"),
        "gpg.program": canaries.program("gpg"),
        "commit.gpgSign": "true",
        "uploadpack.packObjectsHook": canaries.program("pack-objects-hook"),
        "protocol.allow": "always",
        "protocol.ssh.allow": "always",
        "protocol.file.allow": "always",
        "gc.auto": "1",
        "gc.autoDetach": "false",
    }
    for key, value in settings.items():
        git(repo, "config", key, value)
    hooks = repo / ".git" / "hooks"
    shutil.rmtree(hooks, ignore_errors=True)
    shutil.copytree(canaries.hooks("own-hooks"), hooks)


def hello_repo(path: Path) -> Path:
    """examples/hello, committed once, with an uncommitted file of the user's."""
    copy_example(path)
    init_repo(path)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "start")
    (path / "mine.txt").write_text("the user's own, uncommitted\n")
    return path


def partial_clone(base: Path) -> tuple[Path, str]:
    """A blob-less partial clone of a two-commit repository whose promisor remote is reached
    through ssh; returns it and a commit whose file ``f`` is a blob the clone lacks."""
    src = hello_repo(base / "upstream")
    (src / "f.txt").write_text("one\n")
    git(src, "add", "f.txt")
    git(src, "commit", "-q", "-m", "one")
    (src / "f.txt").write_text("two\n")
    git(src, "commit", "-q", "-am", "two")
    git(src, "config", "uploadpack.allowFilter", "true")
    git(src, "config", "uploadpack.allowAnySHA1InWant", "true")
    clone = base / "clone"
    git(base, "clone", "-q", "--no-local", "--filter=blob:none", src.as_uri(), str(clone))
    old = git(clone, "rev-parse", "HEAD~1").strip()
    missing = git(clone, "rev-list", "--objects", "--missing=print", "HEAD")
    assert "?" + git(src, "rev-parse", "HEAD~1:f.txt").strip() in missing.split()
    init_repo(clone)  # identity
    git(clone, "remote", "set-url", "origin", "ssh://example.invalid/upstream")
    return clone, old
