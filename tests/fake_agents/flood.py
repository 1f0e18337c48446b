"""A fake agent that floods its stdout, by argument:

- ``lines [N]``: N (default 100000) numbered lines;
- ``long [MB]``: one line of MB (default 10) megabytes of ``x``, then ``end``;
- ``binary``: random bytes, invalid UTF-8 and NULs, then ``end``;
- ``ansi``: lines full of ANSI colour and cursor escapes, then ``end``.
"""

import os
import sys

out = sys.stdout.buffer
mode = sys.argv[1] if len(sys.argv) > 1 else "lines"
if mode == "lines":
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    out.write(b"".join(b"line %d of the flood\n" % i for i in range(count)))
elif mode == "long":
    megabytes = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    out.write(b"x" * (megabytes * 1024 * 1024) + b"\nend\n")
elif mode == "binary":
    out.write(os.urandom(200_000) + b"\n\xff\xfe\xc3\x28\x00bad\x80\n\xe2\x82\nend\n")
elif mode == "ansi":
    for i in range(1000):
        out.write(b"\x1b[31mred %d\x1b[0m \x1b[2K\x1b[1A\r\x1b]0;title\x07 done\n" % i)
    out.write(b"end\n")
else:
    sys.exit(f"unknown mode {mode!r}")
out.flush()
