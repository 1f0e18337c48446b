"""The egress proxy through real sockets on 127.0.0.1 (and its Unix socket): what it lets through,
what it refuses and reports, and how it streams, half-closes, bounds and times out."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ralph_lsp.sandbox.proxy import EgressProxy, Refusal, private_socket_path

from .origins import Echo, Origin, dechunk, read_response

TEN_MB = 10 * 1024 * 1024


class Proxy:
    """A started proxy and what its refusal callback received."""

    def __init__(self, allowed: list[str], **options: float) -> None:
        self.reported: list[Refusal] = []
        self.proxy = EgressProxy(allowed, self.reported.append, **options)  # type: ignore[arg-type]

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        assert self.proxy.tcp_port is not None
        return await asyncio.open_connection("127.0.0.1", self.proxy.tcp_port, limit=2**20)


@pytest.fixture
async def make_proxy(tmp_path: Path) -> AsyncIterator[object]:
    started: list[Proxy] = []

    async def make(allowed: list[str], **options: float) -> Proxy:
        p = Proxy(allowed, **options)
        await p.proxy.start(private_socket_path(), 0)
        started.append(p)
        return p

    yield make
    for p in started:
        await p.proxy.close()


async def _connect(
    p: Proxy, target: str
) -> tuple[bytes, asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await p.open()
    writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    return head, reader, writer


async def test_tunnel_to_an_allowed_host_relays_both_ways_and_passes_a_half_close_on(
    make_proxy,
) -> None:
    async with Echo() as echo:
        p = await make_proxy([f"127.0.0.1:{echo.port}"])
        head, reader, writer = await _connect(p, f"127.0.0.1:{echo.port}")
        assert head.startswith(b"HTTP/1.1 200"), head
        writer.write(b"ping" * 1000)
        writer.write_eof()  # our side is done; the echo's answer must still come back
        rest = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    assert rest == b"ping" * 1000 + b"bye:4000"
    assert p.proxy.allowed_counts == {f"127.0.0.1:{echo.port}": 1}
    assert p.reported == []


async def test_plain_http_is_forwarded_in_origin_form_without_proxy_headers(make_proxy) -> None:
    async with Origin() as origin:
        p = await make_proxy([f"127.0.0.1:{origin.port}"])
        reader, writer = await p.open()
        writer.write(
            f"GET http://127.0.0.1:{origin.port}/hello?x=1 HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{origin.port}\r\nProxy-Connection: keep-alive\r\n"
            "Proxy-Authorization: Basic c2VjcmV0\r\n\r\n".encode()
        )
        head, body = await asyncio.wait_for(read_response(reader), 10)
        writer.close()
    assert head.startswith(b"HTTP/1.1 200") and body == b"hello"
    sent = origin.heads[0].decode()
    assert sent.startswith("GET /hello?x=1 HTTP/1.1\r\n"), sent
    assert "proxy-" not in sent.lower()
    assert "Connection: close" in sent


@pytest.mark.parametrize("path", ["/hello", "/keep-alive"])
async def test_a_plain_http_reply_tells_the_client_the_connection_closes(
    make_proxy, path: str
) -> None:
    """The proxy ends the client's connection after one reply: the reply's head says so (its
    own keep-alive dropped), or a client reusing the connection has its next request reset."""
    async with Origin() as origin:
        p = await make_proxy([f"127.0.0.1:{origin.port}"])
        reader, writer = await p.open()
        writer.write(f"GET http://127.0.0.1:{origin.port}{path} HTTP/1.1\r\n\r\n".encode())
        head, body = await asyncio.wait_for(read_response(reader), 10)
        writer.close()
    lines = head.decode().lower().split("\r\n")
    assert lines[0] == "http/1.1 200 ok" and body == b"hello", head
    assert [line for line in lines if line.startswith(("connection:", "keep-alive:"))] == [
        "connection: close"
    ]
    assert "content-length: 5" in lines
    assert ("request-id: req_1" in lines) == (path == "/keep-alive")


async def test_plain_http_sends_the_host_it_checked_not_the_clients_own(make_proxy) -> None:
    """Domain fronting: a request line naming an allowed host and a ``Host:`` naming another
    site reaches the allowed origin asking for the allowed host, never for the other site."""
    async with Origin() as origin:
        p = await make_proxy([f"127.0.0.1:{origin.port}"])
        reader, writer = await p.open()
        writer.write(
            f"GET http://127.0.0.1:{origin.port}/hello HTTP/1.1\r\n"
            "Host: evil.example\r\nhost: other.example\r\nAccept: */*\r\n\r\n".encode()
        )
        head, body = await asyncio.wait_for(read_response(reader), 10)
        writer.close()
    assert head.startswith(b"HTTP/1.1 200") and body == b"hello"
    sent = origin.heads[0].decode().lower()
    hosts = [line for line in sent.split("\r\n") if line.startswith("host:")]
    assert hosts == [f"host: 127.0.0.1:{origin.port}"], sent
    assert "evil.example" not in sent and "other.example" not in sent
    assert "accept: */*" in sent


@pytest.mark.parametrize("how", ["CONNECT", "GET"])
async def test_a_host_not_allowed_gets_403_and_is_reported(make_proxy, how: str) -> None:
    async with Origin() as origin:
        p = await make_proxy(["api.anthropic.com", f"127.0.0.1:{origin.port}"])
        reader, writer = await p.open()
        if how == "CONNECT":
            writer.write(b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n")
        else:
            writer.write(b"GET http://evil.example/x HTTP/1.1\r\nHost: evil.example\r\n\r\n")
        head, body = await asyncio.wait_for(read_response(reader), 10)
        writer.close()
    assert head.startswith(b"HTTP/1.1 403"), head
    port = 443 if how == "CONNECT" else 80
    assert f"connection to evil.example:{port} refused (host not in the allowlist)" in (
        body.decode()
    )
    assert 'allowedDomains: ["evil.example"]' in body.decode()
    assert p.reported == [Refusal("evil.example", port, "host not in the allowlist")]
    assert p.reported[0].to_json() == {
        "tool": "Network",
        "input": f"evil.example:{port}",
        "rule": "evil.example",
    }
    assert p.proxy.allowed_counts == {}


@pytest.mark.parametrize("spelling", ["127.0.0.1", "127.1", "2130706433", "0x7f.0.0.1", "[::1]"])
async def test_an_ip_literal_is_refused_unless_listed(make_proxy, spelling: str) -> None:
    async with Echo() as echo:
        p = await make_proxy(["localhost", ".example.com"])
        head, _, writer = await _connect(p, f"{spelling}:443")
        writer.close()
        assert head.startswith(b"HTTP/1.1 403"), head
        assert p.reported[0].reason == "IP address not in the allowlist"
        listed = await make_proxy([f"127.0.0.1:{echo.port}"])
        ok, _, writer = await _connect(listed, f"127.1:{echo.port}")  # the same address
        writer.close()
    assert ok.startswith(b"HTTP/1.1 200"), ok


async def test_a_port_other_than_443_or_80_needs_its_own_entry(make_proxy) -> None:
    async with Echo() as echo:
        bare = await make_proxy(["localhost"])
        head, _, writer = await _connect(bare, f"localhost:{echo.port}")
        writer.close()
        assert head.startswith(b"HTTP/1.1 403"), head
        assert "port" in bare.reported[0].reason and echo.connections == 0
        assert bare.reported[0].entry == f"localhost:{echo.port}"
        named = await make_proxy([f"localhost:{echo.port}"])
        head, reader, writer = await _connect(named, f"localhost:{echo.port}")
        writer.write(b"hi")
        writer.write_eof()
        assert await asyncio.wait_for(reader.read(), 10) == b"hibye:2"
        writer.close()
    assert head.startswith(b"HTTP/1.1 200") and echo.connections == 1


async def test_a_10_mb_streamed_reply_arrives_whole_over_the_unix_socket(make_proxy) -> None:
    async with Origin() as origin:
        p = await make_proxy([f"127.0.0.1:{origin.port}"])
        assert p.proxy.socket_path is not None
        reader, writer = await asyncio.open_unix_connection(str(p.proxy.socket_path))
        writer.write(
            f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\n\r\n"
            f"GET /stream?bytes={TEN_MB} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        )
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        head, body = await asyncio.wait_for(read_response(reader), 60)
        writer.close()
    assert b"text/event-stream" in head
    payload = dechunk(body)
    assert len(payload) == TEN_MB and payload.startswith(b"event: content_block_delta")


async def test_a_client_gone_mid_stream_ends_the_upstream_connection(make_proxy) -> None:
    async with Origin() as origin:
        p = await make_proxy([f"127.0.0.1:{origin.port}"])
        reader, writer = await p.open()
        writer.write(f"GET http://127.0.0.1:{origin.port}/endless HTTP/1.1\r\n\r\n".encode())
        got = 0
        while got < 1024 * 1024:
            got += len(await asyncio.wait_for(reader.read(65536), 10))
        writer.transport.abort()  # gone, without a goodbye
        await asyncio.wait_for(origin.gone.wait(), 10)
        for _ in range(100):
            if p.proxy.active == 0:
                break
            await asyncio.sleep(0.05)
    assert p.proxy.active == 0


async def test_connections_past_the_bound_get_503(make_proxy) -> None:
    async with Echo() as echo:
        p = await make_proxy([f"127.0.0.1:{echo.port}"], max_connections=3)
        held = [await _connect(p, f"127.0.0.1:{echo.port}") for _ in range(3)]
        assert all(h.startswith(b"HTTP/1.1 200") for h, _, _ in held)
        reader, extra = await p.open()
        head, body = await asyncio.wait_for(read_response(reader), 10)
        extra.close()
        assert head.startswith(b"HTTP/1.1 503") and b"busy" in body
        assert echo.connections == 3
        held[0][2].close()
        for _ in range(100):  # the freed slot is taken again
            if p.proxy.active < 3:
                break
            await asyncio.sleep(0.05)
        again, _, w = await _connect(p, f"127.0.0.1:{echo.port}")
        assert again.startswith(b"HTTP/1.1 200")
        for _, _, w2 in [*held[1:], (b"", None, w)]:
            w2.close()


async def test_a_failing_refusal_callback_does_not_stop_the_proxy() -> None:
    def broken(refusal: Refusal) -> None:
        raise RuntimeError("history is full")

    proxy = EgressProxy(["example.com"], broken)
    await proxy.start(None, 0)
    try:
        for _ in range(2):
            reader, writer = await asyncio.open_connection("127.0.0.1", proxy.tcp_port)
            writer.write(b"CONNECT nope.example:443 HTTP/1.1\r\n\r\n")
            head, _ = await asyncio.wait_for(read_response(reader), 10)
            writer.close()
            assert head.startswith(b"HTTP/1.1 403")
    finally:
        await proxy.close()
    assert len(proxy.refusals) == 2


async def test_silent_client_is_dropped_after_the_head_timeout(make_proxy) -> None:
    p = await make_proxy(["example.com"], head_timeout=0.3)
    reader, writer = await p.open()
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()


async def test_unreachable_upstream_is_502_not_a_refusal(make_proxy) -> None:
    async with Echo() as echo:
        port = echo.port  # closed when the block ends: nothing listens there after
    p = await make_proxy([f"127.0.0.1:{port}"])
    head, _, writer = await _connect(p, f"127.0.0.1:{port}")
    writer.close()
    assert head.startswith(b"HTTP/1.1 502"), head
    assert p.reported == []


@pytest.mark.parametrize(
    "request_line", [b"GET /relative HTTP/1.1", b"GET https://a.example/ HTTP/1.1", b"BREW"]
)
async def test_requests_a_proxy_does_not_serve_get_400(make_proxy, request_line: bytes) -> None:
    p = await make_proxy(["a.example"])
    reader, writer = await p.open()
    writer.write(request_line + b"\r\n\r\n")
    head, _ = await asyncio.wait_for(read_response(reader), 10)
    writer.close()
    assert head.startswith(b"HTTP/1.1 400"), head


async def test_the_unix_socket_is_private(tmp_path: Path) -> None:
    proxy = EgressProxy(["example.com"])
    path = private_socket_path()
    await proxy.start(path)
    try:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    finally:
        await proxy.close()
    assert not path.exists()
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    with pytest.raises(ValueError, match="open to other users"):
        await EgressProxy(["example.com"]).start(shared / "proxy.sock")


async def test_an_idle_tunnel_is_closed(make_proxy) -> None:
    async with Echo() as echo:
        p = await make_proxy([f"127.0.0.1:{echo.port}"], idle_timeout=0.4)
        head, reader, writer = await _connect(p, f"127.0.0.1:{echo.port}")
        assert head.startswith(b"HTTP/1.1 200")
        writer.write(b"hi")
        assert await asyncio.wait_for(reader.readexactly(2), 5) == b"hi"
        started = asyncio.get_running_loop().time()
        assert await asyncio.wait_for(reader.read(), 10) == b""  # closed by the proxy
        writer.close()
    assert asyncio.get_running_loop().time() - started >= 0.3


async def test_a_head_too_large_or_cut_short_gets_no_connection(make_proxy) -> None:
    p = await make_proxy(["a.example"])
    reader, writer = await p.open()
    writer.write(b"GET http://a.example/ HTTP/1.1\r\nX-Big: " + b"x" * 70_000)
    head, _ = await asyncio.wait_for(read_response(reader), 10)
    writer.close()
    assert head.startswith(b"HTTP/1.1 431"), head
    reader, writer = await p.open()
    writer.write(b"CONNECT a.example:443 HTTP/1.1\r\n")
    writer.write_eof()
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()
    assert p.proxy.allowed_counts == {} and p.reported == []


async def test_closing_the_proxy_ends_open_tunnels_and_removes_its_socket(make_proxy) -> None:
    async with Echo() as echo:
        p = await make_proxy([f"127.0.0.1:{echo.port}"])
        head, reader, writer = await _connect(p, f"127.0.0.1:{echo.port}")
        assert head.startswith(b"HTTP/1.1 200")
        await p.proxy.close()
        with contextlib.suppress(ConnectionError):
            assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
    assert p.proxy.socket_path is not None and not p.proxy.socket_path.exists()
    assert p.proxy.active == 0
