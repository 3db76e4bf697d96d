"""Soak (issue 15): the edge attacks mixed together, while a victim producer/consumer pair runs over the native port.

The attackers detach the victim's consumer by id, send STOMP messages with out-of-range priorities to the victim's
queue, flood both ports with silent sockets up to the shared limit, start oversize frames before logging in, reuse
the victim's client id and a live STOMP subscription id, compete for the victim's queue with a backtracking LIKE
selector, read the victim's queue by range, and flood a topic whose subscriber never reads (its pending limit keeps
the broker's memory bounded). The victim must receive each of its messages exactly once.
Bounded loops, loopback only; real clock (the sockets are real), each wait has a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator

import pytest
from support.stomp_helpers import RawStompClient
from support.transports import both_listeners

from minibroker import Broker, wire
from minibroker.client import AckMode, Connection, connect
from minibroker.errors import MinibrokerError
from minibroker.plugins.server.tcp import Server
from minibroker.plugins.stomp import StompServer
from minibroker.transport.commands import ReadRange, RemoveConsumer
from minibroker.transport.tcp_link import TcpLink

pytestmark = pytest.mark.soak

TIMEOUT = 10.0
MESSAGES = 400
LIMIT = 60
ROUNDS = 5


@pytest.fixture
async def edges() -> AsyncIterator[tuple[Broker, Server, StompServer]]:
    async with both_listeners(LIMIT, TIMEOUT) as listening:
        yield listening


async def detach_by_foreign_id(url: str, consumer_id: int) -> None:
    attacker = await connect(url)
    try:
        link = attacker._link
        assert isinstance(link, TcpLink)
        with contextlib.suppress(MinibrokerError):
            await link.request(RemoveConsumer(consumer_id, -1))
    finally:
        await attacker.close()


async def hostile_stomp(port: int) -> None:
    peer = await RawStompClient.open(port)
    try:
        for priority in ("99", "-1", "300"):
            await peer.send("/queue/victim", f"hostile-{priority}", priority=priority)
        await peer.request("SUBSCRIBE", {"id": "s", "destination": "/queue/elsewhere"})
        await peer.request("SUBSCRIBE", {"id": "s", "destination": "/queue/victim"})  # refused: id in use
    finally:
        await peer.close()


async def silent_and_partial_sockets(host: str, native_port: int, stomp_port: int, count: int) -> None:
    writers: list[asyncio.StreamWriter] = []
    try:
        for i in range(count):
            port = native_port if i % 2 else stomp_port
            with contextlib.suppress(OSError):
                _reader, writer = await asyncio.open_connection(host, port)
                writers.append(writer)
                if i % 4 == 1:  # a native frame announcing 32 MiB, before HELLO
                    writer.write(wire.encode_handshake() + struct.pack(">IB", 32 * 1024 * 1024, 0x02) + b"x" * 512)
                elif i % 4 == 2:  # a STOMP body announcing 32 MiB, before CONNECTED
                    writer.write(b"CONNECT\ncontent-length:33554432\n\n" + b"x" * 512)
        await asyncio.sleep(0.05)  # let the listeners see them (attackers' pacing; the checks wait on events)
    finally:
        for writer in writers:
            writer.close()


async def expensive_readers(url: str) -> None:
    attacker = await connect(url)
    try:
        session = await attacker.create_session()
        # a LIKE that backtracks exponentially in a naive matcher, on the victim's own queue (it matches nothing)
        await session.create_consumer("victim", selector="b LIKE '%a%a%a%a%a%a%a%a%a%a%a%a%b'")
        link = attacker._link
        assert isinstance(link, TcpLink)
        await link.request(ReadRange("victim", 0, None))  # the whole queue, in bounded answers, consuming nothing
        sleeper = await session.create_consumer("topic://flood?consumer.prefetchSize=1")  # never reads
        producer = await session.create_producer("topic://flood")
        for _ in range(1_200):
            await producer.send("a" * 30 + "b", properties={"b": "a" * 5_000}, persistent=False)
        assert sleeper is not None
    finally:
        await attacker.close()


async def duplicate_client_id(url: str) -> None:
    with contextlib.suppress(MinibrokerError):
        intruder = await connect(url, client_id="victim")
        await intruder.close()


async def test_the_victim_loses_nothing_and_sees_no_duplicate(edges: tuple[Broker, Server, StompServer]) -> None:
    broker, native, stomp = edges
    consumer_conn: Connection = await connect(native.url, client_id="victim")
    producer_conn = await connect(native.url)
    try:
        session = await consumer_conn.create_session(AckMode.CLIENT)
        consumer = await session.create_consumer("victim")
        producer = await (await producer_conn.create_session()).create_producer("victim")
        seen: list[str] = []

        async def receive_all() -> None:
            while len(seen) < MESSAGES + 3 * ROUNDS:
                message = await consumer.receive(timeout=TIMEOUT)
                assert message is not None, f"the victim stalled after {len(seen)} messages"
                body = message.body
                seen.append(body.decode() if isinstance(body, bytes) else body)  # STOMP sends bytes messages
                await message.acknowledge()

        async def produce() -> None:
            for i in range(MESSAGES):
                await producer.send(f"victim-{i}")

        async def attack() -> None:
            for _ in range(ROUNDS):
                await asyncio.gather(
                    detach_by_foreign_id(native.url, consumer.consumer_id),
                    hostile_stomp(stomp.port),
                    silent_and_partial_sockets(native.host, native.port, stomp.port, LIMIT // 2),
                    duplicate_client_id(native.url),
                    expensive_readers(native.url),
                )

        receiver = asyncio.create_task(receive_all())
        await asyncio.wait_for(asyncio.gather(produce(), attack()), 60)
        await asyncio.wait_for(receiver, 60)
        own = [body for body in seen if body.startswith("victim-")]
        assert own == [f"victim-{i}" for i in range(MESSAGES)]
        assert sorted(body for body in seen if body.startswith("hostile-")) == sorted(
            ["hostile--1", "hostile-300", "hostile-99"] * ROUNDS
        )
        assert broker.client_connected("victim")
    finally:
        await producer_conn.close()
        await consumer_conn.close()
