"""TLS listeners (ActiveMQ's ``ssl://`` and ``stomp+ssl://``): the native client and stomp.py over TLS.

The certificate is the self-signed one in ``tests/certs`` (see its README); clients trust it as their CA.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import stomp

from minibroker import Broker
from minibroker.client import connect
from minibroker.plugins.server.tcp import start_server
from minibroker.plugins.stomp import start_stomp_server

CERTS = Path(__file__).resolve().parents[1] / "certs"


def server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERTS / "server.crt", CERTS / "server.key")
    return context


def client_context() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(CERTS / "server.crt"))


@pytest_asyncio.fixture
async def broker() -> AsyncIterator[Broker]:
    async with Broker() as b:
        yield b


class TestNative:
    async def test_send_and_receive_over_tls(self, broker: Broker) -> None:
        server = await start_server(broker, ssl=server_context())
        try:
            assert server.url == f"ssl://127.0.0.1:{server.port}"
            async with await connect(server.url, ssl=client_context()) as conn:
                session = await conn.create_session()
                await (await session.create_producer("orders")).send("over tls")
                msg = await (await session.create_consumer("orders")).receive(timeout=5)
                assert msg is not None and msg.body == "over tls"
        finally:
            await server.close()

    async def test_a_client_that_does_not_trust_the_certificate_is_refused(self, broker: Broker) -> None:
        from minibroker.errors import ConnectionClosed

        server = await start_server(broker, ssl=server_context())
        try:
            with pytest.raises(ConnectionClosed, match="CERTIFICATE_VERIFY_FAILED"):
                await connect(server.url)  # the default context: the self-signed certificate is not trusted
        finally:
            await server.close()


class TestStomp:
    async def test_stomp_py_over_tls(self, broker: Broker) -> None:
        server = await start_stomp_server(broker, ssl=server_context())
        try:
            assert server.url == f"stomp+ssl://127.0.0.1:{server.port}"
            received: list[str] = []
            arrived = threading.Event()

            class Listener(stomp.ConnectionListener):  # type: ignore[misc]
                def on_message(self, frame: stomp.utils.Frame) -> None:
                    received.append(frame.body)
                    arrived.set()

            def run() -> None:
                before = set(threading.enumerate())
                conn = stomp.Connection([("127.0.0.1", server.port)])
                conn.set_ssl(for_hosts=[("127.0.0.1", server.port)], ca_certs=str(CERTS / "server.crt"))
                conn.set_listener("l", Listener())
                conn.connect(wait=True)
                conn.subscribe("/queue/orders", id="s1", ack="auto")
                conn.send("/queue/orders", "hello over tls", receipt="r1")
                try:
                    assert arrived.wait(10)
                finally:
                    conn.disconnect()
                    for thread in set(threading.enumerate()) - before:  # stomp.py's TLS reader: see test_serve_tls
                        thread.join(timeout=10)

            await asyncio.to_thread(run)
            assert received == ["hello over tls"]
        finally:
            await server.close()


class TestHalfOpenSockets:
    """issue 29: a TLS socket holds a connection slot from accept, and its handshake has the listener's deadline:
    half-open TLS sockets can neither exhaust the process's descriptors nor lock the clients out for long (asyncio
    alone keeps them 60 s, outside the count). The same for the native, STOMP and MQTT listeners."""

    @staticmethod
    async def listener(broker: Broker, kind: str) -> Any:
        from minibroker.plugins.mqtt import start_mqtt_server

        if kind == "native":
            return await start_server(broker, ssl=server_context(), max_connections=2, handshake_timeout=0.3)
        if kind == "stomp":
            return await start_stomp_server(broker, ssl=server_context(), max_connections=2, connect_timeout=0.3)
        return await start_mqtt_server(broker, ssl=server_context(), max_connections=2, connect_timeout=0.3)

    @pytest.mark.parametrize("kind", ["native", "stomp", "mqtt"])
    async def test_they_count_from_accept_and_go_at_the_handshake_deadline(self, broker: Broker, kind: str) -> None:
        server = await self.listener(broker, kind)
        try:
            silent = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(2)]
            await wait_for(lambda: broker.sockets.open == 2)
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            assert await asyncio.wait_for(reader.read(), 5) == b""  # no slot: closed at once, before any TLS
            writer.close()
            for silent_reader, silent_writer in silent:  # their handshake deadline: closed without a word
                assert await asyncio.wait_for(silent_reader.read(), 5) == b""
                silent_writer.close()
            await wait_for(lambda: broker.sockets.open == 0)
            if kind == "native":  # and a client gets in again
                async with await connect(server.url, ssl=client_context()) as conn:
                    await (await (await conn.create_session()).create_producer("after")).send("x")
                assert broker.queue("after").size == 1
        finally:
            await server.close()


async def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)  # a socket's fate is the event loop's: polled, with a deadline
