"""Issue 17 over STOMP: an input ActiveMQ would act on and minibroker does not is an ERROR frame whose message is the
UnsupportedFeature's text (the same text the native edges raise), and nothing is created."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from support.stomp_helpers import RawStompClient

from minibroker import Broker, ManualClock
from minibroker.plugins.stomp import StompServer
from minibroker.refusals import refuse


@pytest_asyncio.fixture
async def broker(clock: ManualClock, loop_errors: list[dict[str, Any]]) -> AsyncIterator[Broker]:
    """The scheduler is on: only then do AMQ_SCHEDULED_PERIOD/REPEAT/CRON mean something in ActiveMQ."""
    async with Broker(clock=clock, scheduler_support=True) as b:
        yield b


async def connected(server: StompServer) -> RawStompClient:
    client = await RawStompClient.open(server.port)
    assert client.connected is not None, client.inbox
    return client


SUBSCRIBE_CASES = [
    (
        {"destination": "/topic/ActiveMQ.Advisory.Connection"},
        "stomp-advisory",
        "topic://ActiveMQ.Advisory.Connection",
    ),
    (
        {"destination": "/topic/ActiveMQ.Advisory.SlowConsumer.Queue.orders"},
        "advisory",
        "topic://ActiveMQ.Advisory.SlowConsumer.Queue.orders",
    ),
    (
        {"destination": "/topic/prices?consumer.retroactive=true"},
        "destination-option-retroactive",
        "topic://prices?consumer.retroactive=true",
    ),
    ({"destination": "/queue/orders.>", "browser": "true"}, "wildcard-browser", "queue://orders.>"),
    ({"destination": "/topic/t", "activemq.retroactive": "true"}, "stomp-retroactive", "activemq.retroactive:true"),
]


@pytest.mark.parametrize(("headers", "feature", "value"), SUBSCRIBE_CASES, ids=[c[1] for c in SUBSCRIBE_CASES])
async def test_subscribe_is_refused(
    server: StompServer, broker: Broker, headers: dict[str, str], feature: str, value: str
) -> None:
    client = await connected(server)
    reply = await client.request("SUBSCRIBE", {"id": "s1", **headers})
    assert reply.command == "ERROR"
    assert reply.headers["message"] == refuse(feature, value).message
    assert broker.queue_names() == []
    await client.send("/queue/after", "still connected")  # an ERROR that is not fatal keeps the connection
    await client.close()


SEND_CASES = [
    ({"destination": "/queue/q", "transformation": "jms-object-xml"}, "stomp-object-transformation-class", "<map/>"),
    (
        {"destination": "/queue/q", "transformation": "jms-object-json"},
        "stomp-object-transformation-class",
        '{"java.util.ArrayList":""}',
    ),
]


@pytest.mark.parametrize(("headers", "feature", "body"), SEND_CASES, ids=[c[1] + ":" + c[2] for c in SEND_CASES])
async def test_send_is_refused(
    server: StompServer, broker: Broker, headers: dict[str, str], feature: str, body: str
) -> None:
    client = await connected(server)
    reply = await client.request("SEND", headers, body)
    assert reply.command == "ERROR"
    assert reply.headers["message"].startswith(f"Unsupported feature [{feature}]: ")
    assert broker.queue_names() == []  # nothing half-done: no copy of a composite went out
    await client.close()


async def test_composite_send_and_the_delay_alone_still_work(server: StompServer, broker: Broker) -> None:
    client = await connected(server)
    await client.send("/queue/qa,/queue/qb", "m")
    reply = await client.request("SEND", {"destination": "/queue/later", "AMQ_SCHEDULED_DELAY": "1000"}, "m")
    assert reply.command == "RECEIPT"
    await client.send("/queue/orders.*", "m")  # as on ActiveMQ: a queue of that literal name
    assert broker.queue("qa").size == 1 and broker.queue("qb").size == 1 and broker.queue("orders.*").size == 1
    assert broker.queue("later").size == 0  # held by the scheduler
    await client.close()
