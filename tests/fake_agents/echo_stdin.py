"""A fake agent that reads its whole stdin and prints its length and SHA-256."""

import hashlib
import sys

data = sys.stdin.buffer.read()
print(len(data), hashlib.sha256(data).hexdigest(), flush=True)
