"""A fake reviewer (SPEC §13 "Review"): a real program the engine spawns as a review round.

Its first argument says what it does:

- ``once``:    append one unchecked task under ``## Review`` when the file has none yet, then
  approve (write nothing) on every later round;
- ``never``:   append one more unchecked task every round (it never approves);
- ``approve``: write nothing;
- ``crash``:   write nothing and exit 3 (a reviewer that did not finish: no approval);
- ``hang``:    append a task, then sleep (until it is stopped);
- ``link``:    put a link to ``$FAKE_REVIEW_VICTIM`` (a file of the host's) in the task file's
  place, hoping the host writes the task file's bytes back through it;
- ``hostile``: write a source file (``$FAKE_REVIEW_SOURCE``), create ``$FAKE_REVIEW_CREATE``,
  uncheck the first checked task and append a task; each write that fails is said on stderr.

The prompt comes as with every fake agent (``-p``, ``--prompt-file`` or stdin). Each round is
counted in ``$FAKE_REVIEW_COUNT`` when it is set (a file the reviewer may write: outside the
work tree, which is read-only to it in its sandbox).
"""

from __future__ import annotations

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _common import read_prompt, tasks_file

mode = sys.argv[1]
prompt = read_prompt()
path = tasks_file(prompt)
count = os.environ.get("FAKE_REVIEW_COUNT")
if count:
    with open(count, "a", encoding="utf-8") as f:
        f.write(prompt.splitlines()[0] + "\n")


def append(line: str) -> None:
    text = path.read_text(encoding="utf-8")
    head = "" if "\n## Review\n" in text else "\n## Review\n\n"
    with path.open("a", encoding="utf-8") as f:
        f.write(("" if text.endswith("\n") else "\n") + head + line + "\n")


def attempt(what: str, action: object) -> None:
    try:
        action()  # type: ignore[operator]
    except OSError as exc:
        print(f"fake reviewer: {what}: {exc}", file=sys.stderr)


text = path.read_text(encoding="utf-8")
n = len(re.findall(r"R\.\d+", text)) + 1
if mode == "once" and "## Review" not in text:
    append(f"- [ ] R.{n} Scenario Greeting is not met: hello/cli.py:1 (fake reviewer)")
elif mode == "never":
    append(f"- [ ] R.{n} Scenario Greeting is still not met: hello/cli.py:1 (fake reviewer)")
elif mode == "hostile":
    source = os.environ["FAKE_REVIEW_SOURCE"]
    created = os.environ["FAKE_REVIEW_CREATE"]

    def write(where: str, mode: str, text: str) -> None:
        with open(where, mode, encoding="utf-8") as f:
            f.write(text)

    attempt("write a source file", lambda: write(source, "a", "# the reviewer was here\n"))
    attempt("create a file", lambda: write(created, "w", "made by the reviewer\n"))

    def uncheck() -> None:
        now = path.read_text(encoding="utf-8")
        path.write_text(re.sub(r"\[x\]", "[ ]", now, count=1), encoding="utf-8")

    attempt("uncheck a task", uncheck)
    attempt("append a task", lambda: append(f"- [ ] R.{n} Scenario Greeting (fake reviewer)"))
elif mode == "link":
    link = path.with_name(path.name + ".link")
    os.symlink(os.environ["FAKE_REVIEW_VICTIM"], link)
    os.replace(link, path)
elif mode == "hang":
    append(f"- [ ] R.{n} Scenario Greeting, said before the reviewer was stopped")
    print("fake reviewer hang: waiting", flush=True)
    time.sleep(600)
print(f"fake reviewer {mode}: done")
if mode == "crash":
    sys.exit(3)
