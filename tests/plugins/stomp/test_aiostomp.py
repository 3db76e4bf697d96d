"""aiostomp, an asyncio STOMP client from the package index, used as applications use it (issue 16, item 5): its
defaults (heart-beats 1000,1000, content-length on every SEND, reconnect), handlers that ack by returning True and
NACK by returning False, reconnection after a dropped connection, under the fixtures' virtual time and on real time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from aiostomp import AioStomp

from minibroker import Broker, ManualClock, RealClock
from minibroker.plugins.pytest_plugin import StompEndpoint
from minibroker.plugins.stomp import StompServer, start_stomp_server
from minibroker.testing import dead_letters, wait_for_consumers, wait_for_queue_size


class Inbox:
    """A handler that keeps what it gets; it acks (returns True) unless the body is ``b"poison"``."""

    def __init__(self) -> None:
        self.bodies: asyncio.Queue[bytes] = asyncio.Queue()

    async def handle(self, frame: Any, body: bytes) -> bool:
        await self.bodies.put(body)
        return body != b"poison"

    async def next(self, timeout: float = 10.0) -> bytes:
        return await asyncio.wait_for(self.bodies.get(), timeout)


async def connected(host: str, port: int, **options: Any) -> AioStomp:
    client = AioStomp(host, port, reconnect_timeout=100, **options)
    await client.connect()
    return client


class TestOnTheFixture:
    async def test_send_and_receive(self, minibroker: Broker, minibroker_stomp: StompEndpoint) -> None:
        client = await connected(minibroker_stomp.host, minibroker_stomp.port)
        inbox = Inbox()
        client.subscribe("/queue/orders", handler=inbox.handle)
        client.send("/queue/orders", "order-1", headers={"persistent": "true", "region": "eu"})
        assert await inbox.next() == b"order-1"
        await wait_for_queue_size(minibroker, "orders", 0)
        assert minibroker.queue("orders").dequeued == 1
        client.close()

    async def test_a_nacked_message_is_dead_lettered(self, minibroker: Broker, minibroker_stomp: StompEndpoint) -> None:
        """The handler's False is a NACK: ActiveMQ poison-acks the message to the DLQ (client-individual ack)."""
        client = await connected(minibroker_stomp.host, minibroker_stomp.port)
        inbox = Inbox()
        client.subscribe("/queue/orders", ack="client-individual", handler=inbox.handle)
        client.send("/queue/orders", "poison", headers={"persistent": "true"})
        client.send("/queue/orders", "fine", headers={"persistent": "true"})
        assert {await inbox.next(), await inbox.next()} == {b"poison", b"fine"}
        await wait_for_queue_size(minibroker, "ActiveMQ.DLQ", 1)
        [letter] = dead_letters(minibroker)
        assert letter.body == b"poison"  # aiostomp sends content-length: a BytesMessage, as on ActiveMQ
        client.close()

    async def test_it_reconnects_and_resubscribes_after_a_drop(
        self, minibroker: Broker, minibroker_stomp: StompEndpoint
    ) -> None:
        client = await connected(minibroker_stomp.host, minibroker_stomp.port)
        inbox = Inbox()
        client.subscribe("/queue/orders", handler=inbox.handle)
        client.send("/queue/orders", "before")
        assert await inbox.next() == b"before"
        server: StompServer = minibroker_stomp.server
        minibroker.drop_connections()
        await server.wait_connection_count(0)
        await wait_for_consumers(minibroker, "orders", 1)  # aiostomp reconnects and subscribes again
        client.send("/queue/orders", "after")
        assert await inbox.next() == b"after"
        client.close()

    async def test_idle_heart_beating_client_stays_on_virtual_time(
        self, minibroker: Broker, minibroker_stomp: StompEndpoint, manual_clock: ManualClock
    ) -> None:
        """aiostomp's default heart-beats are real-time; autojump must not move the broker's read checks past them."""
        client = await connected(minibroker_stomp.host, minibroker_stomp.port)
        inbox = Inbox()
        client.subscribe("/queue/orders", handler=inbox.handle)
        waiting = asyncio.ensure_future(inbox.next(timeout=30))
        await asyncio.wait({waiting}, timeout=2.5)  # idle, on the real clock
        assert minibroker_stomp.server.connection_count == 1
        client.send("/queue/orders", "still here")
        assert await waiting == b"still here"
        client.close()


@pytest_asyncio.fixture
async def real_time_server() -> AsyncIterator[StompServer]:
    async with Broker(clock=RealClock()) as broker:
        server = await start_stomp_server(broker, "127.0.0.1", 0)
        try:
            yield server
        finally:
            await server.close()


@pytest.mark.parametrize("ack", ["auto", "client", "client-individual"])
async def test_on_real_time(real_time_server: StompServer, ack: str) -> None:
    client = await connected("127.0.0.1", real_time_server.port)
    inbox = Inbox()
    client.subscribe("/queue/work", ack=ack, handler=inbox.handle)
    for i in range(20):
        client.send("/queue/work", f"job-{i}")
    assert sorted([await inbox.next() for _ in range(20)]) == sorted(f"job-{i}".encode() for i in range(20))
    await wait_for_queue_size(real_time_server.broker, "work", 0)
    client.close()
