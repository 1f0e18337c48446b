#!/usr/bin/env python3
"""A verification suite that starts a server on 127.0.0.1 and talks to it (a sandboxed check
has a loopback of its own)."""

import http.server
import threading
import urllib.request

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]
with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
    assert reply.status == 200, reply.status
print(f"loopback server on 127.0.0.1:{port} answered")
server.shutdown()
