"""The OpenWire listener over real sockets, with a Python peer built on the codec: the server speaks first, frames
past the bound fail the connection, and the timers (connect deadline, inactivity as negotiated, keep-alives) run on
the broker's clock. TLS as the other listeners have it."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minibroker import Broker
from minibroker.clock import ManualClock
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire import start_openwire_server
from minibroker.plugins.openwire.codec import OpenWireDecoder, encode_command
from minibroker.plugins.openwire.primitives import marshal_primitive_map
from minibroker.typed import Long

CERTS = Path(__file__).resolve().parents[2] / "certs"
CONNECTION = ow.ConnectionId("ID:py-1:1")


class Peer:
    """A bare OpenWire client: writes commands, reads what the server sends."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.decoder = OpenWireDecoder()

    async def read(self, timeout: float = 5.0) -> ow.DataStructure | None:
        """The next command (None: the server closed the connection)."""
        async with asyncio.timeout(timeout):
            while (command := self.decoder.next_command()) is None:
                data = await self.reader.read(65536)
                if not data:
                    return None
                self.decoder.receive_data(data)
            return command

    def send(self, command: ow.DataStructure) -> None:
        self.writer.write(encode_command(command))

    async def handshake(self, inactivity_ms: int = 30_000) -> None:
        hello = await self.read()
        assert isinstance(hello, ow.WireFormatInfo) and hello.version == 12
        offer = {"MaxInactivityDuration": Long(inactivity_ms), "TightEncodingEnabled": True}
        self.send(ow.WireFormatInfo(version=12, marshalled_properties=marshal_primitive_map(offer)))
        assert isinstance(await self.read(), ow.BrokerInfo)
        self.send(ow.ConnectionInfo(1, True, CONNECTION, "py-client"))
        assert await self.read() == ow.ConnectionControl(connected_brokers="", reconnect_to="")  # as ActiveMQ's
        assert await self.read() == ow.Response(correlation_id=1)


_OPEN: list[Peer] = []


async def open_peer(port: int, context: ssl.SSLContext | None = None) -> Peer:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    _OPEN.append(Peer(reader, writer))
    return _OPEN[-1]


@pytest.fixture(autouse=True)
async def _close_peers() -> AsyncIterator[None]:
    yield
    while _OPEN:
        writer = _OPEN.pop().writer
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()


async def test_the_server_speaks_first_and_a_session_runs() -> None:
    async with Broker() as broker, await start_openwire_server(broker) as server:
        peer = await open_peer(server.port)
        await peer.handshake()
        await server.wait_connection_count(1)
        peer.send(ow.RemoveInfo(2, True, CONNECTION, -1))
        assert await peer.read() == ow.Response(correlation_id=2)
        peer.send(ow.ShutdownInfo(3))
        assert await peer.read() is None  # the server closed after ShutdownInfo
        await server.wait_connection_count(0)
        assert server.url == f"tcp://127.0.0.1:{server.port}"


async def test_a_frame_past_the_bound_fails_the_connection() -> None:
    async with Broker() as broker, await start_openwire_server(broker) as server:
        peer = await open_peer(server.port)
        assert isinstance(await peer.read(), ow.WireFormatInfo)
        peer.writer.write((1 << 20).to_bytes(4, "big") + b"\x01")  # before login: 64 KiB at most
        error = await peer.read()
        assert isinstance(error, ow.ConnectionErrorCommand) and error.exception is not None
        assert error.exception.class_name == "java.io.IOException"
        assert "larger than max allowed" in (error.exception.message or "")
        assert await peer.read() is None
        await server.wait_connection_count(0)


async def test_a_socket_that_never_logs_in_is_closed_at_the_connect_deadline() -> None:
    clock = ManualClock()
    async with Broker(clock=clock) as broker, await start_openwire_server(broker, connect_timeout=30) as server:
        peer = await open_peer(server.port)
        assert isinstance(await peer.read(), ow.WireFormatInfo)
        await server.wait_connection_count(1)
        assert server.handshakes_pending == 1
        await clock.advance(31)
        assert await peer.read() is None
        await server.wait_connection_count(0)


async def test_inactivity_as_negotiated_keep_alives_then_the_read_check() -> None:
    clock = ManualClock()
    async with Broker(clock=clock) as broker, await start_openwire_server(broker) as server:
        peer = await open_peer(server.port)
        await peer.handshake(inactivity_ms=3_000)  # below the server's 30 s: the minimum wins
        assert server.keep_alive_clients == 1
        await clock.advance(1.01)  # a third of it without a write: the server's KeepAliveInfo
        assert await peer.read() == ow.KeepAliveInfo()
        peer.send(ow.KeepAliveInfo(5, True))  # answered in kind
        assert await peer.read() == ow.KeepAliveInfo()
        await clock.advance(4)  # then nothing read for a whole period: dropped, as ActiveMQ's read check does
        while (command := await peer.read()) is not None:
            assert command == ow.KeepAliveInfo()
        await server.wait_connection_count(0)


async def test_tls() -> None:
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(CERTS / "server.crt", CERTS / "server.key")
    client_context = ssl.create_default_context(cafile=str(CERTS / "server.crt"))
    async with Broker() as broker, await start_openwire_server(broker, ssl=server_context) as server:
        assert server.url.startswith("ssl://127.0.0.1:")
        peer = await open_peer(server.port, client_context)
        await peer.handshake()
        _OPEN.remove(peer)
        peer.writer.close()
        await peer.writer.wait_closed()
        await server.wait_connection_count(0)


@pytest.mark.parametrize("count", [3])
async def test_max_connections_is_shared_with_the_other_listeners(count: int) -> None:
    async with Broker() as broker, await start_openwire_server(broker, max_connections=count) as server:
        peers = [await open_peer(server.port) for _ in range(count)]
        for peer in peers:
            assert isinstance(await peer.read(), ow.WireFormatInfo)
        extra = await open_peer(server.port)
        assert await extra.read() is None  # refused at accept
        assert server.connection_count == count
