"""The HTTP listener over real sockets: keep-alive and pipelining, bad input answered with its 4xx and a close, the
head and idle deadlines, the login before the body, and the socket slots it shares with the other listeners."""

from __future__ import annotations

import asyncio
import base64

from support.http_helpers import read_answer, request, secured_broker

from minibroker import Broker
from minibroker.plugins.http import HttpServer, start_http_server


async def open_raw(server: HttpServer) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(server.host, server.port)


async def test_keep_alive_and_pipelined_requests(http: tuple[Broker, HttpServer]) -> None:
    """Two requests written at once get two answers, in order, on one connection."""
    _, server = http
    reader, writer = await open_raw(server)
    one = b"GET /api/jolokia/version HTTP/1.1\r\nHost: localhost\r\n\r\n"
    writer.write(one + b"GET /nothing-here HTTP/1.1\r\nHost: localhost\r\n\r\n")
    first = await asyncio.wait_for(read_answer(reader), 5)
    second = await asyncio.wait_for(read_answer(reader), 5)
    assert (first.status, second.status) == (200, 404)
    assert first.json()["value"]["agent"] == "1.7.1"
    writer.close()


async def test_bad_input_gets_its_status_and_a_close(http: tuple[Broker, HttpServer]) -> None:
    _, server = http
    for data, status in [
        (b"NOT HTTP\r\n\r\n", 400),
        (b"GET / HTTP/3.0\r\nHost: localhost\r\n\r\n", 505),
        (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", 414),
        (b"GET / HTTP/1.1\r\nHost: localhost\r\n" + b"X: y\r\n" * 101 + b"\r\n", 431),
        (b"POST /api/jolokia HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999\r\n\r\n", 413),
    ]:
        reader, writer = await open_raw(server)
        writer.write(data)
        answer = await asyncio.wait_for(read_answer(reader), 5)
        assert answer.status == status, data[:40]
        assert answer.headers["connection"] == "close"
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed
        writer.close()


async def test_a_slow_head_and_an_idle_connection_are_closed() -> None:
    """A head must come within the handshake timeout (408), and a silent keep-alive connection goes after the idle
    timeout."""
    async with Broker() as broker:
        server = await start_http_server(broker, handshake_timeout=0.2, idle_timeout=0.2)
        async with server:
            reader, writer = await open_raw(server)
            writer.write(b"GET / HTTP/1.1\r\nHost: localhost\r\n")  # never ends
            answer = await asyncio.wait_for(read_answer(reader), 5)
            assert answer.status == 408
            writer.close()
            reader, writer = await open_raw(server)
            writer.write(b"GET /api/jolokia/version HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert (await asyncio.wait_for(read_answer(reader), 5)).status == 200
            assert await asyncio.wait_for(reader.read(), 5) == b""  # idle: closed
            writer.close()
            await server.wait_connection_count(0)


async def test_a_wrong_login_is_refused_before_the_body() -> None:
    """401 with a basic challenge; with a body declared, the answer comes before the body is sent."""
    async with secured_broker() as broker:
        server = await start_http_server(broker)
        async with server:
            assert (await request(server, "GET", "/api/jolokia/version")).status == 401
            answer = await request(server, "GET", "/api/jolokia/version", auth=("admin", "wrong"))
            assert answer.status == 401 and answer.headers["www-authenticate"] == 'Basic realm="ActiveMQRealm"'
            assert (await request(server, "GET", "/api/jolokia/version", auth=("admin", "secret"))).status == 200
            reader, writer = await open_raw(server)
            token = base64.b64encode(b"admin:nope").decode()
            writer.write(
                b"POST /api/jolokia HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n"
                + f"Authorization: Basic {token}\r\n\r\n".encode()
            )
            assert (await asyncio.wait_for(read_answer(reader), 5)).status == 401
            writer.close()


async def test_expect_continue() -> None:
    async with Broker() as broker:
        server = await start_http_server(broker)
        async with server:
            reader, writer = await open_raw(server)
            writer.write(
                b"POST /api/message/q?type=queue HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n"
                b"Content-Type: text/plain\r\nContent-Length: 5\r\n\r\n"
            )
            assert (await asyncio.wait_for(read_answer(reader), 5)).status == 100
            writer.write(b"hello")
            assert (await asyncio.wait_for(read_answer(reader), 5)).status == 200
            writer.close()
            assert broker.queue("q").browse()[0].body == "hello\n"


async def test_max_connections_is_shared() -> None:
    """A socket past ``max_connections`` is closed at once."""
    async with Broker() as broker:
        server = await start_http_server(broker, max_connections=1)
        async with server:
            _, first = await open_raw(server)
            await server.wait_connection_count(1)
            reader, second = await open_raw(server)
            assert await asyncio.wait_for(reader.read(), 5) == b""
            first.close()
            second.close()


async def test_static_files_and_security_headers(http: tuple[Broker, HttpServer]) -> None:
    _, server = http
    page = await request(server, "GET", "/")
    assert page.status == 200 and b'name="csrf-token"' in page.body and b"{{csrf}}" not in page.body
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    assert (await request(server, "GET", "/static/console.js")).status == 200
    assert (await request(server, "GET", "/static/../app.py")).status == 404
    assert (await request(server, "PUT", "/")).status == 405
