"""Sandboxed runs (SPEC §10): a streamed model reply through the egress proxy vs direct.

``proxy_stream_ratio``: a 127.0.0.1 server (its own process) streams a 10 MB reply as chunked
server-sent events, like a model API; a client (its own process) reads it all, once directly and
once along the whole path a sandboxed agent's HTTPS takes: ``CONNECT`` to the bridge's local
port, the bridge's relay to the proxy's Unix socket, the proxy's tunnel to the server. The client
times from its connect to the last byte (process starts are not counted: through the proxy, it
first waits, untimed, for one tunnel to open, since the bridge starts its relay after the
client). The two kinds
alternate, one pair at a time, and so does which of a pair goes first; the value is the p50
over the pairs of (through the proxy ÷ direct), so that a shared machine's load, which comes
and goes, hits both sides of a pair.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from bench.common import PY, load_average, median, rnd
from bench.report import Results

STREAM_BYTES = 10 * 1024 * 1024

# The model server: ``GET /stream?bytes=N`` → N bytes of SSE events in HTTP chunks.
ORIGIN = r"""
import asyncio, sys
EVENT = b'event: content_block_delta\r\ndata: {"type":"text_delta","text":"'
EVENT += b"x" * 900 + b'"}\r\n\r\n'
async def serve(reader, writer):
    head = await reader.readuntil(b"\r\n\r\n")
    total = int(head.split(b" ")[1].split(b"bytes=")[1])
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                 b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    sent = 0
    while sent < total:
        piece = EVENT[: total - sent]
        writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        sent += len(piece)
        if writer.transport.get_write_buffer_size() > 262144:
            await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    writer.close()
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""

# The client: through ``$HTTPS_PROXY`` (CONNECT) when set, else direct; prints seconds and bytes.
CLIENT = r"""
import os, socket, sys, time
port, total = int(sys.argv[1]), sys.argv[2]
proxy = os.environ.get("HTTPS_PROXY", "")
def tunnel():
    ph, pp = proxy.rsplit("/", 1)[1].rsplit(":", 1)
    s = socket.create_connection((ph, int(pp)))
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % port)
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 200"), head
    return s
if proxy:  # untimed: the bridge starts its relay after it has started us (a process start)
    w = tunnel()
    w.sendall(b"GET /stream?bytes=1 HTTP/1.1\r\nHost: model\r\n\r\n")
    while w.recv(1 << 16):
        pass
    w.close()
start = time.perf_counter()
if proxy:
    s = tunnel()
else:
    s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /stream?bytes=%s HTTP/1.1\r\nHost: model\r\n\r\n" % total.encode())
got = 0
while data := s.recv(1 << 20):
    got += len(data)
print(time.perf_counter() - start, got)
"""


def _client(argv: list[str]) -> tuple[float, int]:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    seconds, got = out.split()
    return float(seconds), int(got)


async def proxy_stream(r: Results, reps: int) -> None:
    from ralph_lsp.sandbox.bridge import bridge_argv
    from ralph_lsp.sandbox.proxy import EgressProxy, private_socket_path

    origin = subprocess.Popen([PY, "-c", ORIGIN], stdout=subprocess.PIPE, text=True)
    try:
        assert origin.stdout is not None
        port = int(await asyncio.to_thread(origin.stdout.readline))
        proxy = EgressProxy([f"127.0.0.1:{port}"])
        socket_path = private_socket_path()
        await proxy.start(socket_path)
        client = [PY, "-c", CLIENT, str(port), str(STREAM_BYTES)]
        direct: list[float] = []
        via: list[float] = []
        sizes: set[int] = set()
        try:
            proxied = bridge_argv(PY, socket_path, client)
            for i in range(reps + 1):  # the first pair warms up and is dropped
                first, second = (client, proxied) if i % 2 else (proxied, client)
                a, n1 = await asyncio.to_thread(_client, first)
                b, n2 = await asyncio.to_thread(_client, second)
                d, p = (a, b) if i % 2 else (b, a)  # which goes first alternates too
                direct.append(d)
                via.append(p)
                sizes |= {n1, n2}
        finally:
            await proxy.close()
            Path(socket_path).parent.rmdir()
    finally:
        origin.kill()
        origin.wait()
    direct, via = direct[1:], via[1:]
    if len(sizes) != 1 or min(sizes) < STREAM_BYTES:
        raise RuntimeError(f"a reply came back incomplete: {sorted(sizes)} bytes")
    # Each pair is measured back to back, so the load of a shared machine hits both alike;
    # the p50 of the pairs' ratios is steadier than the ratio of the two p50s (kept below).
    pairwise = [v / d for v, d in zip(via, direct, strict=True)]
    r.put("proxy_stream_ratio", rnd(median(pairwise), 3), reps)
    r.details["proxy_stream"] = {
        "bytes": STREAM_BYTES,
        "direct_ms_p50": rnd(median(direct) * 1000),
        "proxied_ms_p50": rnd(median(via) * 1000),
        "ratio_of_p50s": rnd(median(via) / median(direct), 3),
        "direct_ms": [rnd(d * 1000, 1) for d in direct],
        "proxied_ms": [rnd(v * 1000, 1) for v in via],
        "load_average_1min": rnd(load_average()),
        "path": "client -> bridge 127.0.0.1 -> unix socket -> EgressProxy CONNECT -> server",
    }


if __name__ == "__main__":  # python -m bench.sandbox_cases: one quick look
    res = Results()
    asyncio.run(proxy_stream(res, int(sys.argv[1]) if len(sys.argv) > 1 else 3))
    print(res.values, res.details)
