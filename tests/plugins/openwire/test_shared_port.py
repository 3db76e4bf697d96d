"""One port for the native protocol and OpenWire (``start_server(openwire=True)``, what ``minibroker serve`` does on
61616): each client's first bytes say which protocol it speaks (issue 44, item 1). Python peers on both sides; the
real Java client runs in ``test_serve_openwire.py``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import connect
from minibroker.errors import LimitExceeded
from minibroker.plugins._protocol_switch import ProtocolSwitch, Route
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire.codec import MAGIC, encode_command
from minibroker.plugins.openwire.primitives import marshal_primitive_map
from minibroker.plugins.server.tcp import NATIVE_SIGNATURE, OPENWIRE_SIGNATURE, Server, start_server
from minibroker.typed import Long
from minibroker.wire import encode_handshake, encode_hello

from .test_listener import Peer

CERTS = Path(__file__).resolve().parents[2] / "certs"
CONNECTION = ow.ConnectionId("ID:py-shared:1")


def client_wire_format() -> bytes:
    """The WireFormatInfo a JMS client sends first (the loose encoding, before anything is negotiated)."""
    offer = {"MaxInactivityDuration": Long(30_000), "TightEncodingEnabled": True}
    return encode_command(ow.WireFormatInfo(version=12, marshalled_properties=marshal_primitive_map(offer)))


class OpenWirePeer(Peer):
    """An OpenWire client as ActiveMQ's: it speaks first, then reads the server's WireFormatInfo and BrokerInfo."""

    async def log_in(self, first: bytes | None = None) -> None:
        """Send the WireFormatInfo (``first``: already sent, byte by byte) and ConnectionInfo, check the answers."""
        if first is None:
            self.writer.write(client_wire_format())
        hello = await self.read()
        assert isinstance(hello, ow.WireFormatInfo) and hello.version == 12
        assert isinstance(await self.read(), ow.BrokerInfo)
        self.send(ow.ConnectionInfo(1, True, CONNECTION, "py-client"))
        assert isinstance(await self.read(), ow.ConnectionControl)
        assert await self.read() == ow.Response(correlation_id=1)


_WRITERS: list[asyncio.StreamWriter] = []


async def open_raw(
    server: Server, context: ssl.SSLContext | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
    _WRITERS.append(writer)
    return reader, writer


@pytest.fixture(autouse=True)
async def _close_sockets() -> AsyncIterator[None]:
    yield
    while _WRITERS:
        writer = _WRITERS.pop()
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()


async def closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """What the server wrote before it closed the socket (EOF or a reset)."""
    try:
        return await asyncio.wait_for(reader.read(), 5)
    except ConnectionResetError:
        return b""


def test_the_signatures_are_the_protocols_first_frames() -> None:
    assert encode_handshake()[4:9] == NATIVE_SIGNATURE
    assert client_wire_format()[4:13] == OPENWIRE_SIGNATURE == bytes([ow.WireFormatInfo.TYPE]) + MAGIC


async def test_both_protocols_on_one_port_at_once() -> None:
    async with Broker() as broker, await start_server(broker, openwire=True) as server:
        native = await connect(server.url)
        reader, writer = await open_raw(server)
        java_like = OpenWirePeer(reader, writer)
        await java_like.log_in()
        openwire = server.openwire
        assert openwire is not None and openwire.url == server.url
        await openwire.wait_connection_count(1)
        assert server.connections == 1 and broker.sockets.open == 2
        session = await native.create_session()
        producer = await session.create_producer("orders")
        await producer.send("from the native client")
        assert broker.queue("orders").size == 1
        await native.close()


async def test_first_bytes_that_come_one_at_a_time() -> None:
    async with Broker() as broker, await start_server(broker, openwire=True) as server:
        reader, writer = await open_raw(server)
        for byte in encode_handshake() + encode_hello(1, None, None, None):
            writer.write(bytes([byte]))
            await writer.drain()
        assert (await reader.readexactly(9))[4:9] == NATIVE_SIGNATURE  # the native server's own handshake
        reader, writer = await open_raw(server)
        first = client_wire_format()
        for byte in first[:20]:
            writer.write(bytes([byte]))
            await writer.drain()
        writer.write(first[20:])
        await OpenWirePeer(reader, writer).log_in(first)


@pytest.mark.parametrize(
    "garbage", [b"GET / HTTP/1.1\r\n\r\n", b"\x00\x00\x00\x09\x01MBRX", b"\x00\x00\x01\x00\x01ActiveMX"]
)
async def test_anything_else_is_closed_with_a_log_line(garbage: bytes, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "minibroker.server")
    async with Broker() as broker, await start_server(broker, openwire=True) as server:
        reader, writer = await open_raw(server)
        writer.write(garbage)
        assert await closed_by_server(reader) == b""  # nothing written: no protocol spoke
        assert "neither minibroker's native protocol nor OpenWire" in caplog.text
        assert broker.sockets.open == 0 and server.handshakes_pending == 0
        assert server.openwire is not None and server.openwire.connection_count == 0


async def test_a_silent_socket_holds_a_slot_until_the_connect_deadline(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    caplog.set_level(logging.WARNING, "minibroker.server")
    async with Broker(clock=clock) as broker, await start_server(broker, openwire=True, handshake_timeout=10) as server:
        reader, writer = await open_raw(server)
        writer.write(b"\x00\x00")  # not enough to tell
        async with asyncio.timeout(5):
            while server.handshakes_pending != 1:
                await asyncio.sleep(0)
        assert broker.sockets.open == 1
        await clock.advance(9.9)
        assert server.handshakes_pending == 1
        await clock.advance(0.1)
        assert await closed_by_server(reader) == b""
        assert "too few bytes to tell its protocol within 10 s" in caplog.text
        assert broker.sockets.open == 0


async def test_a_full_broker_refuses_a_native_client_in_its_own_words() -> None:
    async with Broker() as broker, await start_server(broker, openwire=True, max_connections=1) as server:
        first = await connect(server.url)
        with pytest.raises(LimitExceeded):
            await connect(server.url)
        await first.close()


async def test_tls_on_the_shared_port() -> None:
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(CERTS / "server.crt", CERTS / "server.key")
    client_context = ssl.create_default_context(cafile=CERTS / "server.crt")
    async with Broker() as broker, await start_server(broker, openwire=True, ssl=server_context) as server:
        assert server.url.startswith("ssl://")
        native = await connect(server.url, ssl=client_context)
        reader, writer = await open_raw(server, client_context)
        await OpenWirePeer(reader, writer).log_in()
        assert server.openwire is not None and server.openwire.url == server.url
        await server.openwire.wait_connection_count(1)
        assert server.connections == 1
        await native.close()


async def test_closing_the_server_drops_both_sides() -> None:
    async with Broker() as broker:
        server = await start_server(broker, openwire=True)
        reader, writer = await open_raw(server)
        await OpenWirePeer(reader, writer).log_in()
        silent_reader, _ = await open_raw(server)
        await server.close()
        await closed_by_server(reader)
        assert await closed_by_server(silent_reader) == b""
        assert broker.sockets.open == 0


async def test_a_protocol_that_cannot_start_loses_that_socket_only(caplog: pytest.LogCaptureFixture) -> None:
    """The kit's switch alone: a route whose handler fails to start (a bug, an import that fails) closes that socket,
    logs why, and gives its slot back."""

    def broken() -> asyncio.BaseProtocol:
        raise ImportError("no such protocol here")

    async with Broker() as broker:
        switch = ProtocolSwitch(
            [Route("broken", 0, b"BRK", broken)],
            sockets=broker.sockets,
            max_connections=10,
            clock=broker.clock,
            connect_timeout=30,
            log=logging.getLogger("minibroker.test-switch"),
        )
        listening = await asyncio.get_running_loop().create_server(switch, "127.0.0.1", 0)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", listening.sockets[0].getsockname()[1])
            _WRITERS.append(writer)
            writer.write(b"BRK")
            assert await closed_by_server(reader) == b""
            assert "cannot start broken" in caplog.text and "no such protocol here" in caplog.text
            assert broker.sockets.open == 0 and not switch.pending
        finally:
            listening.close()
            await listening.wait_closed()
