"""Issue 15, items 9 and 10: one count of client sockets across the native and STOMP listeners, so a flood on one
port can neither exceed ``max_connections`` nor lock the other protocol's clients out beyond it."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import AsyncIterator

import pytest
from support.stomp_helpers import PeerClosed, RawStompClient
from support.transports import both_listeners

from minibroker import Broker, ManualClock, wire
from minibroker._defaults import DEFAULT_HANDSHAKE_TIMEOUT
from minibroker.client import connect
from minibroker.errors import InvalidClientIdError, LimitExceeded
from minibroker.plugins.server.tcp import Server, start_server
from minibroker.plugins.stomp import StompServer

TIMEOUT = 5.0
LIMIT = 3


@pytest.fixture
async def listeners() -> AsyncIterator[tuple[Broker, Server, StompServer]]:
    async with both_listeners(LIMIT, TIMEOUT) as listening:
        yield listening


async def test_stomp_sockets_past_max_connections_are_closed(
    listeners: tuple[Broker, Server, StompServer], caplog: pytest.LogCaptureFixture
) -> None:
    broker, _native, stomp = listeners
    peers = [await RawStompClient.open(stomp.port) for _ in range(LIMIT)]
    with caplog.at_level(logging.WARNING, logger="minibroker.stomp"):
        extra = await RawStompClient.open(stomp.port, connect=False)
        await extra.wait_closed()
    assert broker.sockets.open == LIMIT
    # a refusal is a WARN naming the peer, as the native listener and ActiveMQ log it
    assert any(r.levelno == logging.WARNING and "max_connections" in r.getMessage() for r in caplog.records)
    for peer in peers:
        await peer.close()
    await extra.close()
    await stomp.wait_connection_count(0)
    assert broker.sockets.open == 0


async def test_stomp_and_native_sockets_share_one_limit(listeners: tuple[Broker, Server, StompServer]) -> None:
    _broker, native, stomp = listeners
    peers = [await RawStompClient.open(stomp.port) for _ in range(LIMIT - 1)]
    first = await connect(native.url)
    with pytest.raises(LimitExceeded, match="at most 3 connections"):
        await connect(native.url)
    extra = await RawStompClient.open(stomp.port, connect=False)
    with pytest.raises((PeerClosed, ConnectionError)):
        await extra.connect()
    await extra.close()
    await first.close()
    for peer in peers:
        await peer.close()
    await stomp.wait_connection_count(0)
    again = await connect(native.url)
    await again.close()


async def test_a_silent_native_socket_is_closed_at_the_handshake_deadline() -> None:
    clock = ManualClock()
    async with Broker(clock=clock) as broker:
        native = await start_server(broker, port=0, max_connections=1)
        try:
            reader, writer = await asyncio.open_connection(native.host, native.port)
            # the server's handshake arrives once the deadline is armed (the same step writes one and arms the other)
            await asyncio.wait_for(reader.readexactly(len(wire.encode_handshake())), TIMEOUT)
            assert broker.sockets.open == 1
            await clock.advance(DEFAULT_HANDSHAKE_TIMEOUT - 1)
            assert broker.sockets.open == 1
            await clock.advance(2)
            rest = await asyncio.wait_for(reader.read(), TIMEOUT)  # everything up to EOF: the socket was closed
            assert b"no HELLO within" in rest
            writer.close()
            await asyncio.wait_for(native.close(), TIMEOUT)  # returns once every accept task has ended
            assert broker.sockets.open == 0
        finally:
            await asyncio.wait_for(native.close(), TIMEOUT)


async def test_a_duplicate_client_id_is_refused_on_the_native_port(
    listeners: tuple[Broker, Server, StompServer],
) -> None:
    broker, native, _stomp = listeners
    first = await connect(native.url, client_id="app")
    with pytest.raises(InvalidClientIdError, match="Client: app already connected from tcp://"):
        await connect(native.url, client_id="app")
    assert broker.client_connected("app")
    await first.close()
    again = await connect(native.url, client_id="app")
    await again.close()


async def test_a_stranger_cannot_make_the_native_port_buffer_a_large_partial_frame(
    listeners: tuple[Broker, Server, StompServer],
) -> None:
    _broker, native, _stomp = listeners
    reader, writer = await asyncio.open_connection(native.host, native.port)
    # a frame header announcing 1 MiB before any HELLO: refused at once, nothing buffered
    writer.write(wire.encode_handshake() + struct.pack(">IB", 1024 * 1024, 0x02) + b"x" * 100)
    rest = await asyncio.wait_for(reader.read(), TIMEOUT)
    assert b"too large" in rest or b"larger" in rest
    writer.close()


async def test_a_stranger_cannot_make_the_stomp_port_buffer_a_large_partial_frame(
    listeners: tuple[Broker, Server, StompServer],
) -> None:
    _broker, _native, stomp = listeners
    peer = await RawStompClient.open(stomp.port, connect=False)
    # a 90 MiB body announced, 100 KiB of it sent: before CONNECTED, refused without buffering the rest
    peer.send_raw(b"CONNECT\ncontent-length:94371840\n\n" + b"y" * (100 * 1024))
    await peer.wait_closed()
    await peer.close()


async def test_a_window_of_large_messages_is_rendered_as_the_subscriber_reads() -> None:
    """issue 15, item 7: one dispatch round rendered a whole prefetch window (1,000 messages of any size) at once,
    for a client that never reads too. Now at most 1 MiB of messages is rendered per write; the rest waits, unrendered,
    until the peer has read what went before: a reader gets every message, one that never reads holds its window
    (nothing more is copied for it) and gives it back when it goes."""
    from support.stomp_helpers import RawStompClient

    async with Broker(clock=ManualClock(autojump=True)) as broker:
        from minibroker.plugins.stomp import start_stomp_server

        async with await start_stomp_server(broker, port=0) as server, await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("big")
            for _ in range(60):
                await producer.send(b"y" * 500_000)
            _reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(
                b"CONNECT\naccept-version:1.2\nhost:x\n\n\0SUBSCRIBE\nid:1\nack:client\ndestination:/queue/big\n\n\0"
            )
            await broker.run_ready()
            (silent,) = server._connections
            converter = silent.converter
            assert (
                converter is not None and len(converter._backlog) >= 20
            )  # what the socket has not taken waits unrendered
            writer.close()  # it never read a byte: what it held comes back
            await asyncio.wait_for(server.wait_connection_count(0), TIMEOUT)
            reader = await RawStompClient.open(server.port)
            await reader.request("SUBSCRIBE", {"id": "s", "destination": "/queue/big", "ack": "client-individual"})
            for _ in range(60):
                frame = await reader.message()
                assert len(frame.body) == 500_000
                reader.send_frame("ACK", {"id": frame.headers["ack"]})
            await reader.barrier()  # every ACK handled
            assert broker.queue("big").size == 0
            await reader.close()
