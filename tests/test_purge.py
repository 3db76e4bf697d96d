"""Cleaning a shared broker (issue 29, item 7): purge a queue, a wildcard of queues (``>``: all of them), a durable
subscription's backlog, or the waiting messages a selector matches (one message by id), through the connection
door on every native edge, with the right to administer each queue checked before anything goes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.transports import TRANSPORTS, close_servers, connect_to  # type: ignore[import-not-found]

from minibroker import Broker, ManualClock, durable_queue_name
from minibroker.client import AckMode, Connection, connect
from minibroker.errors import AccessDenied
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User


@pytest.fixture
async def broker() -> AsyncIterator[Broker]:
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        yield broker
        await close_servers()


async def fill(conn: Connection, queue: str, *bodies: str) -> list[str]:
    producer = await (await conn.create_session()).create_producer(queue)
    return [await producer.send(body) for body in bodies]  # send() returns the message id


def bodies(broker: Broker, queue: str) -> list[str]:
    return [str(m.body) for m in broker.browse_all(queue)]


@pytest.mark.parametrize("transport", TRANSPORTS)
class TestPurge:
    async def test_a_queue_in_flight_messages_included(self, broker: Broker, transport: str) -> None:
        async with await connect_to(broker, transport) as conn:
            await fill(conn, "orders", "a", "b", "c")
            consumer = await (await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)).create_consumer("orders")
            assert (await consumer.receive(timeout=1)) is not None  # one in flight
            assert await conn.purge("orders") == 3
            assert bodies(broker, "orders") == []
            assert broker.queue_statistics("orders").size == 0  # type: ignore[union-attr]

    async def test_a_wildcard_and_every_queue(self, broker: Broker, transport: str) -> None:
        async with await connect_to(broker, transport) as conn:
            for queue in ("orders.eu", "orders.us", "billing"):
                await fill(conn, queue, "x", "y")
            assert await conn.purge("orders.>") == 4
            assert [bodies(broker, q) for q in ("orders.eu", "orders.us", "billing")] == [[], [], ["x", "y"]]
            assert await conn.purge(">") == 2
            assert all(not bodies(broker, q) for q in broker.queue_names())

    async def test_a_durable_subscriptions_backlog(self, broker: Broker, transport: str) -> None:
        async with await connect_to(broker, transport, client_id="audit") as owner:
            await (await (await owner.create_session()).create_durable_subscriber("topic://prices", "all")).close()
        async with await connect_to(broker, transport) as conn:
            await fill(conn, "topic://prices", "p1", "p2")
            queue = durable_queue_name("audit", "all")
            assert [d.pending for d in broker.durable_subscriptions("prices")] == [2]
            assert await conn.purge(queue) == 2
            assert [d.pending for d in broker.durable_subscriptions("prices")] == [0]

    async def test_one_message_by_id_and_by_selector(self, broker: Broker, transport: str) -> None:
        async with await connect_to(broker, transport) as conn:
            ids = await fill(conn, "DLQ.orders", "keep", "drop", "keep too")
            assert await conn.purge("DLQ.orders", selector=f"JMSMessageID = '{ids[1]}'") == 1
            assert bodies(broker, "DLQ.orders") == ["keep", "keep too"]
            assert await conn.purge("DLQ.orders", selector="JMSMessageID = 'ID:nobody'") == 0
            assert await conn.purge("DLQ.orders", selector="1 = 1") == 2
            assert bodies(broker, "DLQ.orders") == []

    async def test_a_selector_leaves_messages_in_flight_to_their_consumer(self, broker: Broker, transport: str) -> None:
        async with await connect_to(broker, transport) as conn:
            await fill(conn, "work", "held", "waiting")
            consumer = await (await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)).create_consumer(
                "work?consumer.prefetchSize=1"
            )
            await broker.settled()
            assert broker.queue_statistics("work").inflight == 1  # type: ignore[union-attr]  # "held", prefetched
            assert await conn.purge("work", selector="1 = 1") == 1  # "waiting" only
            held = await consumer.receive(timeout=1)
            assert held is not None and held.body == "held"
            await held.acknowledge()
            await conn.broker_info(["work"])  # a round trip: over TCP the ack has reached the broker before it
            assert bodies(broker, "work") == []


USERS = {"ops": User("pw", {"ops"}), "app": User("pw", {"apps"})}
ENTRIES = [
    AuthorizationEntry(">", read="ops", write="ops,apps", admin="ops"),
    AuthorizationEntry("orders.>", read="apps", write="apps", admin="apps"),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_purging_needs_admin_on_every_queue_it_empties(transport: str) -> None:
    async with Broker(clock=ManualClock(autojump=True), plugins=[AuthPlugin(USERS, ENTRIES)]) as broker:
        async with await connect(broker) as trusted:
            await fill(trusted, "orders.eu", "o")
            await fill(trusted, "secret", "s")
        async with await connect_to(broker, transport, user="app", password="pw") as app:
            with pytest.raises(AccessDenied, match="not authorized to administer: queue://secret"):
                await app.purge(">")
            assert bodies(broker, "orders.eu") == ["o"]  # refused as a whole: nothing went
            assert await app.purge("orders.>") == 1
            with pytest.raises(AccessDenied):
                await app.purge("secret", selector="1 = 1")
        async with await connect_to(broker, transport, user="ops", password="pw") as ops:
            assert await ops.purge(">") == 1
        await close_servers()
