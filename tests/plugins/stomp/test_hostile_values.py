"""Issue 15, item 5: a header value out of range from a STOMP peer never makes dispatch to another peer fail.

ActiveMQ's STOMP converter reads ``priority`` with ``Integer.parseInt`` and stores it through ``setJMSPriority``,
a cast to a Java byte; its cursors then order by that value clamped to 0..9. minibroker's messages carry the
clamped value, so a native consumer (whose wire holds 0..9) gets the message instead of being disconnected."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from support.stomp_helpers import RawStompClient

from minibroker import Broker, ManualClock, RealClock
from minibroker.client import connect
from minibroker.plugins.server.tcp import Server, start_server
from minibroker.plugins.stomp import StompServer, start_stomp_server

TIMEOUT = 5.0


@pytest.fixture
async def servers() -> AsyncIterator[tuple[Broker, Server, StompServer]]:
    async with Broker(clock=RealClock()) as broker:
        native = await start_server(broker, port=0)
        stomp = await start_stomp_server(broker)
        try:
            yield broker, native, stomp
        finally:
            await stomp.close()
            await asyncio.wait_for(native.close(), TIMEOUT)


@pytest.mark.parametrize(("header", "priority"), [("99", 9), ("-1", 0), ("300", 9), ("7", 7), ("-200", 9)])
async def test_an_out_of_range_priority_reaches_a_native_consumer_clamped(
    servers: tuple[Broker, Server, StompServer], header: str, priority: int
) -> None:
    _broker, native, stomp = servers
    conn = await connect(native.url)
    try:
        consumer = await (await conn.create_session()).create_consumer("victim")
        peer = await RawStompClient.open(stomp.port)
        receipt = await peer.send("/queue/victim", "hostile", priority=header)
        assert receipt.command == "RECEIPT"
        received = await consumer.receive(timeout=TIMEOUT)
        assert received is not None
        assert received.priority == priority
        await peer.close()
    finally:
        await conn.close()


async def test_a_priority_beyond_a_java_int_drops_the_stomp_peer_only(
    servers: tuple[Broker, Server, StompServer],
) -> None:
    _broker, _native, stomp = servers
    peer = await RawStompClient.open(stomp.port)
    peer.send_frame("SEND", {"destination": "/queue/victim", "priority": str(2**31)}, "x")
    await peer.wait_closed()
    await peer.close()
    assert _broker.queue_statistics("victim") is None


async def test_fast_heart_beats_keep_a_fixed_number_of_timers(server: StompServer, clock: ManualClock) -> None:
    peer = await RawStompClient.open(server.port, **{"heart-beat": "5,5"})
    (protocol,) = server._connections
    timers = len(protocol._timers)
    for _ in range(200):
        peer.send_raw(b"\n")  # the client's own heart-beat, so the read check keeps the connection
        await peer.barrier()
        await clock.advance(0.005)
    assert len(protocol._timers) == timers
    await peer.close()
