"""A fake agent that exits 0 but leaves a ``setsid`` grandchild holding stdout open.

The grandchild writes its pid to the file named by ``FAKE_AGENT_PID_FILE``, prints a line now
and then, and would live forever.
"""

import os
import sys
import time
from pathlib import Path


def main() -> int:
    path = os.environ["FAKE_AGENT_PID_FILE"]
    if os.fork() == 0:
        if os.fork() == 0:
            os.setsid()
            with open(path, "a") as f:
                f.write(f"{os.getpid()}\n")
            while True:
                os.write(1, b"grandchild still here\n")  # one write: lines never interleave
                time.sleep(0.2)
        os._exit(0)
    os.wait()
    while not os.path.exists(path) or not Path(path).read_text().strip():
        time.sleep(0.01)
    os.write(1, b"agent done\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
