"""``ralph.diff``'s memory does not grow with the patch (issue 25, fault 8): at most the cap is
read from git, then git is stopped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.git.conftest import NEEDS_GIT, git, init_repo

pytestmark = NEEDS_GIT

PATCH_MB = 48

PROBE = """
import json, os, resource, sys
from pathlib import Path
from ralph_lsp.loop.review import diff_json, iteration_diff
root = Path(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
d = iteration_diff(root, "alpha", "r-1", 1)
answer = diff_json(root, d)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
children = []
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
            children.append(stat.split()[1])
print(json.dumps({"grewKiB": after - before, "patch": len(answer["patch"]),
                  "truncated": answer["patchTruncated"], "children": children,
                  "files": [f["path"] for f in answer["files"]]}))
"""


def test_a_huge_patch_is_read_only_up_to_the_cap(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "big")
    (repo / "small.txt").write_text("small\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "small")
    line = "a line of a patch that goes on and on, number %08d\n"
    with (repo / "huge.txt").open("w") as f:
        for i in range(PATCH_MB * 1024 * 1024 // len(line % 0)):
            f.write(line % i)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "huge")
    git(repo, "update-ref", "refs/ralph/alpha/r-1/0", "HEAD~1")
    git(repo, "update-ref", "refs/ralph/alpha/r-1/1", "HEAD")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(repo)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(proc.stdout)
    assert seen["truncated"] and seen["patch"] == 4 * 1024 * 1024
    assert seen["files"] == ["huge.txt"]
    assert seen["children"] == [], "git was left running"
    # a 48 MiB patch, a 4 MiB answer: the probe grows by a few times the answer, not the patch
    print("peak growth KiB", seen["grewKiB"])
    assert seen["grewKiB"] < 24 * 1024, seen
