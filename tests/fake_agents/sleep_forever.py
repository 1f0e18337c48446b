"""A fake agent that hangs silently (like a CLI waiting forever for a network or a login)."""

import time

while True:
    time.sleep(3600)
