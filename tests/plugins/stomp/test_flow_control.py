"""Producer flow control over STOMP: a SEND to a full queue holds the connection's following frames, as ActiveMQ
blocks a flow-controlled producer (the scenarios every edge shares are in ``tests/transport_kit``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from support.stomp_helpers import RawStompClient
from support.waiting import until

from minibroker import Broker, DestinationPolicy, ManualClock
from minibroker.plugins.stomp import StompServer, start_stomp_server

TIMEOUT = 5.0


@pytest_asyncio.fixture
async def limited() -> AsyncIterator[tuple[Broker, StompServer]]:
    async with Broker(clock=ManualClock(), policies={"full.>": DestinationPolicy(memory_limit=1)}) as broker:
        server = await start_stomp_server(broker)
        try:
            yield broker, server
        finally:
            await server.close()


async def held_client(broker: Broker, server: StompServer) -> RawStompClient:
    """A client whose SEND to ``full.q`` is held (the queue already holds a message)."""
    client = await RawStompClient.open(server.port)
    await client.send("/queue/full.q", "first")
    client.send_frame("SEND", {"destination": "/queue/full.q", "receipt": "held"}, b"second")
    await until(lambda: broker.waiting_producers == 1)
    return client


class TestHeldSend:
    async def test_the_frames_behind_a_held_send_wait_for_it(self, limited: tuple[Broker, StompServer]) -> None:
        broker, server = limited
        client = await held_client(broker, server)
        client.send_frame("SEND", {"destination": "/queue/other", "receipt": "behind"}, b"x")
        consumer = await RawStompClient.open(server.port)
        await consumer.barrier()  # another connection is served meanwhile
        assert broker.queue("other").size == 0 and not client.inbox
        await consumer.request("SUBSCRIBE", {"destination": "/queue/full.q", "id": "s"})
        assert (await consumer.message()).body == b"first"  # auto ack: room again
        held = await client.expect(lambda f: f.command == "RECEIPT")
        behind = await client.expect(lambda f: f.command == "RECEIPT")
        assert (held.headers["receipt-id"], behind.headers["receipt-id"]) == ("held", "behind")
        assert broker.queue("other").size == 1 and broker.waiting_producers == 0
        await client.close()
        await consumer.close()

    async def test_a_composite_send_is_never_half_sent(self, limited: tuple[Broker, StompServer]) -> None:
        broker, server = limited
        client = await RawStompClient.open(server.port)
        await client.send("/queue/full.q", "first")
        client.send_frame("SEND", {"destination": "/queue/free,/queue/full.q", "receipt": "both"}, b"second")
        await until(lambda: broker.waiting_producers == 1)
        assert broker.queue("free").size == 0
        broker.queue("full.q").purge()
        reply = await client.expect(lambda f: f.command == "RECEIPT")
        assert reply.headers["receipt-id"] == "both"
        assert broker.queue("free").size == 1 and broker.queue("full.q").size == 1
        await client.close()

    async def test_a_client_that_drops_while_held_is_noticed_when_the_wait_ends(
        self, limited: tuple[Broker, StompServer]
    ) -> None:
        """Reading stops while a SEND is held (TCP back-pressure, as a blocked ActiveMQ transport thread): the drop
        is seen once the SEND is taken, which the broker had already read."""
        broker, server = limited
        client = await held_client(broker, server)
        client.abort()
        await client.close()
        assert server.connection_count == 1
        broker.queue("full.q").purge()
        await server.wait_connection_count(0)
        assert broker.waiting_producers == 0 and [m.body for m in broker.queue("full.q").browse()] == ["second"]

    async def test_a_held_connection_is_not_dropped_for_silence(self, limited: tuple[Broker, StompServer]) -> None:
        """The broker expects a heart-beat every second but reads nothing while a SEND is held."""
        broker, server = limited
        client = await RawStompClient.open(server.port, heart_beat="1000,0")
        await client.send("/queue/full.q", "first")
        client.send_frame("SEND", {"destination": "/queue/full.q", "receipt": "held"}, b"second")
        await until(lambda: broker.waiting_producers == 1)
        clock = broker.clock
        assert isinstance(clock, ManualClock)
        await clock.advance(5.0)
        assert server.connection_count == 1 and not client.eof
        broker.queue("full.q").purge()
        assert (await client.expect(lambda f: f.command == "RECEIPT")).headers["receipt-id"] == "held"
        await client.close()
