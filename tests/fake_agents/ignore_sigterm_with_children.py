"""A stubborn fake agent: ignores SIGTERM and leaves stubborn offspring.

It forks a child, and the child forks a grandchild that escapes with ``setsid``; all three ignore
SIGTERM and sleep forever. Each appends its pid to the file named by ``FAKE_AGENT_PID_FILE``;
the agent prints ``ready`` once all three pids are there.
"""

import os
import signal
import sys
import time


def record(path: str) -> None:
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\n")


def main() -> None:
    path = os.environ["FAKE_AGENT_PID_FILE"]
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    record(path)
    if os.fork() == 0:  # the child
        record(path)
        if os.fork() == 0:  # the grandchild escapes into its own session
            os.setsid()
            record(path)
        while True:
            time.sleep(3600)
    while True:
        with open(path) as f:
            if len(f.read().split()) >= 3:
                break
        time.sleep(0.01)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
