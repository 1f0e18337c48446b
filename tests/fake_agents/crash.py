"""A fake agent that fails: ``crash.py exit N`` exits with N, ``crash.py signal N`` kills itself
with signal N. It prints one line to each stream first."""

import os
import sys

mode, number = sys.argv[1], int(sys.argv[2])
print("about to crash", flush=True)
print("crash: going down", file=sys.stderr, flush=True)
if mode == "signal":
    os.kill(os.getpid(), number)
sys.exit(number)
