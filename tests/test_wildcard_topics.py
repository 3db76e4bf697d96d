"""Wildcard topic subscribers (``topic://prices.>``, ``topic://prices.*``): ActiveMQ's matching, topics that exist
before and after the subscriber, one prefetch window across them, and nothing left behind when it goes (the
visible behaviour replays from the ``wildcard_topic_*`` recordings)."""

from __future__ import annotations

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, connect
from minibroker.errors import UnsupportedFeature


async def test_existing_and_later_topics_through_one_subscriber() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker, client_id="c") as conn:
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        await session.create_consumer("topic://prices.eu")  # makes the topic before the wildcard subscriber
        everything = await session.create_consumer("topic://prices.>", prefetch=2)
        one_level = await session.create_consumer("topic://prices.*")
        producer = await session.create_producer()
        for topic in ("prices.eu", "prices.us", "prices.eu.de", "other.x"):  # prices.us, .eu.de: made by the send
            await producer.send(topic, destination="topic://" + topic)
        got = [await everything.receive(timeout=1) for _ in range(3)]  # a window of 2 refilled across topics
        assert await everything.receive(timeout=1) is None
        assert sorted(m.body for m in got if m is not None) == ["prices.eu", "prices.eu.de", "prices.us"]
        assert got[-1] is not None
        await got[-1].acknowledge()
        assert [m.body for m in [await one_level.receive(timeout=1) for _ in range(2)] if m is not None] == [
            "prices.eu",
            "prices.us",
        ]
        await everything.close()
        assert all(everything.consumer_id not in t.pending for t in broker.core.topics.values())


async def test_stomp_subscribes_with_a_wildcard() -> None:
    from support.stomp_helpers import RawStompClient

    from minibroker.plugins.stomp import start_stomp_server

    async with Broker(clock=ManualClock(autojump=True)) as broker, await start_stomp_server(broker, port=0) as server:
        stomp = await RawStompClient.open(server.port)
        await stomp.request("SUBSCRIBE", {"id": "s", "destination": "/topic/prices.>"})
        async with await connect(broker) as conn:
            await (await (await conn.create_session()).create_producer("topic://prices.eu")).send("p1")
        msg = await stomp.message()
        assert msg.body == b"p1" and msg.headers["destination"] == "/topic/prices.eu"
        await stomp.close()


async def test_wildcard_browsers_stay_refused_and_durable_wildcards_keep_messages() -> None:
    async with Broker() as broker, await connect(broker, client_id="c") as conn:
        session = await conn.create_session()
        with pytest.raises(UnsupportedFeature, match="wildcard-browser"):
            await session.create_browser("orders.>")
        await (await session.create_durable_subscriber("topic://prices.>", "d")).close()
        await (await session.create_producer("topic://prices.eu")).send("p1")
        (view,) = broker.durable_subscriptions()
        assert (view.topic, view.pending) == ("prices.>", 1)


async def test_a_wildcard_durable_subscriber_s_transacted_acks_count_on_each_message_s_topic() -> None:
    """ActiveMQ counts a durable subscriber's ack on the message's own topic when the ack arrives, inside a
    transaction too (DurableTopicSubscription.acknowledge): a subscription to ``prices.>`` counts on ``prices.eu``,
    once for an ack later rolled back, once more for the ack that commits."""
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker, client_id="c") as conn:
        session = await conn.create_session(AckMode.SESSION_TRANSACTED)
        sub = await session.create_durable_subscriber("topic://prices.>", "all-prices")
        await (await (await conn.create_session()).create_producer("topic://prices.eu")).send("1.08")
        assert (msg := await sub.receive(timeout=5)) is not None and msg.body == "1.08"
        await session.rollback()
        stats = broker.topic_statistics("prices.eu")
        assert stats is not None and stats.dequeued == 1
        assert (msg := await sub.receive(timeout=5)) is not None and msg.redelivered
        await session.commit()
        stats = broker.topic_statistics("prices.eu")
        assert stats is not None and stats.dequeued == 2
