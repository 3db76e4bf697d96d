"""Advisory topics (issue 18, item 6): what applications watch to know a consumer or producer is there. The
visible behaviour replays from the ``advisory_*`` recordings of ActiveMQ 5.17.2; these tests cover the API around
it, the corners (wildcard subscribers, temporary queues, durable subscribers, composites) and turning it off."""

from __future__ import annotations

import pytest

from minibroker import Broker, ManualClock
from minibroker.advisory import (
    connection_advisory_topic,
    consumer_advisory_topic,
    data_structure,
    destination_advisory_topic,
    dlq_advisory_topic,
    expired_advisory_topic,
    producer_advisory_topic,
)
from minibroker.client import AckMode, Consumer, ReceivedMessage, connect
from minibroker.errors import UnsupportedFeature


async def advisories(consumer: Consumer) -> list[ReceivedMessage]:
    """Every advisory the consumer has now (a no-wait receive until empty)."""
    got = []
    while (msg := await consumer.receive(timeout=0.1)) is not None:
        got.append(msg)
    return got


def kinds(messages: list[ReceivedMessage], prop: str) -> list[tuple[object, object]]:
    return [((data_structure(m) or {}).get("dataStructure"), m.properties.get(prop)) for m in messages]


async def test_consumer_advisories_count_consumers_and_replay_to_a_late_watcher() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        first = await session.create_consumer("orders")
        watcher = await session.create_consumer(consumer_advisory_topic("orders"))
        second = await session.create_consumer("orders")
        await first.close()
        got = await advisories(watcher)
        assert kinds(got, "consumerCount") == [("ConsumerInfo", 1), ("ConsumerInfo", 2), ("RemoveInfo", 1)]
        assert all(m.type == "Advisory" and not m.persistent for m in got)
        info = data_structure(got[1])
        assert info is not None and info["destination"] == "queue://orders"
        assert got[0].destination.name == "ActiveMQ.Advisory.Consumer.Queue.orders"
        await second.close()


async def test_a_wildcard_watcher_hears_of_every_queue_and_topic_consumers_are_apart() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker, client_id="c") as conn:
        session = await conn.create_session()
        watcher = await session.create_consumer("topic://ActiveMQ.Advisory.Consumer.Queue.>")
        topics = await session.create_consumer("topic://ActiveMQ.Advisory.Consumer.Topic.prices")
        await session.create_consumer("a")
        await session.create_consumer("b,c")  # a composite: one advisory per part
        await session.create_consumer("topic://prices")
        await session.create_durable_subscriber("topic://prices", "d")
        queues = await advisories(watcher)
        assert sorted(m.destination.name.rsplit(".", 1)[1] for m in queues) == ["a", "b", "c"]
        assert kinds(await advisories(topics), "consumerCount") == [("ConsumerInfo", 1), ("ConsumerInfo", 2)]


async def test_producer_and_connection_advisories() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        producers = await session.create_consumer(producer_advisory_topic("topic://prices"))
        connections = await session.create_consumer(connection_advisory_topic())
        producer = await session.create_producer("topic://prices")
        anonymous = await session.create_producer()  # no destination: no advisory, as ActiveMQ
        await producer.close()
        await anonymous.close()
        async with await connect(broker):
            pass
        assert kinds(await advisories(producers), "producerCount") == [("ProducerInfo", 1), ("RemoveInfo", 0)]
        assert [k for k, _ in kinds(await advisories(connections), "")] == [
            "ConnectionInfo",  # this connection, replayed
            "ConnectionInfo",
            "RemoveInfo",
        ]


async def test_expired_and_dead_lettered_messages_are_advised_with_their_id() -> None:
    clock = ManualClock(autojump=True)
    async with Broker(clock=clock) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        expired = await session.create_consumer(expired_advisory_topic("q"))
        dead = await session.create_consumer(dlq_advisory_topic("q"))
        await (await session.create_producer("q")).send("m1", ttl=0.1)
        await clock.advance(31)  # past the expiry sweep (ActiveMQ's expireMessagesPeriod, 30 s)
        assert broker.queue("q").size == 0
        (e,) = await advisories(expired)
        (d,) = await advisories(dead)
        for msg in (e, d):
            info = data_structure(msg)
            assert info is not None and info["dataStructure"] == "ActiveMQTextMessage"
            assert msg.properties["orignalMessageId"] == info["messageId"]


async def test_advisory_support_off_publishes_nothing() -> None:
    async with Broker(clock=ManualClock(autojump=True), advisory_support=False) as broker, await connect(broker) as c:
        session = await c.create_session()
        watcher = await session.create_consumer(consumer_advisory_topic("orders"))
        await session.create_consumer("orders")
        assert await advisories(watcher) == []


async def test_other_advisory_topics_are_refused() -> None:
    async with Broker() as broker, await connect(broker) as conn:
        session = await conn.create_session()
        with pytest.raises(UnsupportedFeature, match="advisory"):
            await session.create_consumer("topic://ActiveMQ.Advisory.SlowConsumer.Queue.orders")


async def test_a_send_to_an_advisory_topic_reaches_its_subscribers_as_a_plain_message() -> None:
    """ActiveMQ takes it silently and publishes it there (issue 42: recorded over STOMP); it was refused."""
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        watcher = await session.create_consumer(consumer_advisory_topic("orders"))
        await (await session.create_producer()).send("not an advisory", destination=consumer_advisory_topic("orders"))
        got = await watcher.receive(timeout=1)
        assert got is not None and got.body == "not an advisory" and data_structure(got.message) is None


def test_data_structure_is_none_for_an_ordinary_message() -> None:
    from minibroker.message import Destination, Message

    assert data_structure(Message("ID:1", Destination.queue("q"), "{}")) is None


@pytest.mark.parametrize(("name", "origin"), [("minibroker", "minibroker"), ("east-1", "east-1")])
async def test_advisories_name_the_broker_they_come_from(name: str, origin: str) -> None:
    """issue 30, item 16: ``originBrokerName`` and ``originBrokerURL`` follow ``Broker(name=...)`` (ActiveMQ's
    ``brokerName``; an embedded one's URL is ``vm://<name>``)."""
    async with Broker(clock=ManualClock(autojump=True), name=name) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        watcher = await session.create_consumer("topic://ActiveMQ.Advisory.Consumer.Queue.orders")
        await session.create_consumer("orders")
        [advisory] = await advisories(watcher)
        assert advisory.get_property("originBrokerName") == origin
        assert advisory.get_property("originBrokerURL") == f"vm://{origin}"


#: Java 17's ConcurrentHashMap iteration order for these keys (printed by a ten-line Java program putting them in
#: order): ActiveMQ replays destination advisories from such a map, keyed by destinations hashed by their names
JAVA_ORDERS = [
    (["early", "second"], ["early", "second"]),
    (["orders", "billing", "a1", "a2", "ActiveMQ.DLQ"], ["a1", "ActiveMQ.DLQ", "a2", "orders", "billing"]),
    (
        [f"q{i}" for i in range(20)],
        [
            "q1",
            "q2",
            "q3",
            "q4",
            "q5",
            "q6",
            "q7",
            "q8",
            "q9",
            "q11",
            "q10",
            "q13",
            "q12",
            "q15",
            "q14",
            "q17",
            "q16",
            "q19",
            "q18",
            "q0",
        ],
    ),
]


@pytest.mark.parametrize(("made", "iterated"), JAVA_ORDERS)
def test_destination_replay_order_is_javas_hash_map_order(made: list[str], iterated: list[str]) -> None:
    from minibroker._core.advisory import java_hash_order

    assert java_hash_order(made) == iterated


def destinations(messages: list[ReceivedMessage]) -> list[tuple[object, object]]:
    return [
        ((data_structure(m) or {}).get("operationType"), (data_structure(m) or {}).get("destination")) for m in messages
    ]


async def test_a_late_destination_watcher_hears_of_every_queue_in_activemqs_order() -> None:
    """issue 30, item 10: what a new subscriber to ``ActiveMQ.Advisory.Queue`` is told first (20 queues: past the
    map's first resize)."""
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        producer = await session.create_producer()
        for i in range(20):
            await producer.send("x", destination=f"q{i}")
        watcher = await session.create_consumer(destination_advisory_topic("queue"))
        got = await advisories(watcher)
        assert destinations(got) == [(0, f"queue://{name}") for name in JAVA_ORDERS[2][1]]


async def test_a_temporary_queue_is_advised_when_made_and_when_deleted() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        watcher = await session.create_consumer(destination_advisory_topic("queue", temporary=True))
        plain = await session.create_consumer(destination_advisory_topic("queue"))
        temp = await session.create_temporary_queue()
        await temp.delete()
        got = await advisories(watcher)
        name = f"temp-queue://{temp.destination.name}"
        assert destinations(got) == [(0, name), (1, name)]
        assert await advisories(plain) == []  # a temporary queue is advised on the TempQueue topic only


async def test_destination_advisories_follow_advisory_support() -> None:
    async with Broker(clock=ManualClock(autojump=True), advisory_support=False) as broker, await connect(broker) as c:
        session = await c.create_session()
        watcher = await session.create_consumer(destination_advisory_topic("topic"))
        await (await session.create_producer()).send("x", destination="topic://prices")
        assert await advisories(watcher) == []


async def test_a_wildcard_advisory_subscriber_gets_no_replay() -> None:
    """ActiveMQ replays connections, consumers and destinations only to subscribers of those topics by name: a
    ``ActiveMQ.Advisory.>`` subscriber first gets the master broker advisory's last image, then what happens."""
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        await session.create_consumer("orders")
        watcher = await session.create_consumer("topic://ActiveMQ.Advisory.>")
        [master] = await advisories(watcher)
        assert str(master.destination) == "topic://ActiveMQ.Advisory.MasterBroker"
        assert data_structure(master) == {"dataStructure": None}
        await session.create_consumer("billing")
        got = await advisories(watcher)
        assert [(data_structure(m) or {}).get("dataStructure") for m in got] == ["DestinationInfo", "ConsumerInfo"]


def test_destination_advisory_topic_names() -> None:
    assert destination_advisory_topic() == "topic://ActiveMQ.Advisory.Queue"
    assert destination_advisory_topic("topic", temporary=True) == "topic://ActiveMQ.Advisory.TempTopic"
    with pytest.raises(ValueError, match="kind"):
        destination_advisory_topic("queues")


async def test_a_transacted_send_makes_its_destination_before_the_commit() -> None:
    """ActiveMQ looks a destination up (making it) when a send arrives, in a transaction or not: a browser sees an
    empty queue, a watcher hears of it, and a rollback leaves the queue there (recorded in the mixed corpus, e.g.
    mixed_5_025)."""
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        watcher = await session.create_consumer(destination_advisory_topic("queue"))
        transacted = await conn.create_session(AckMode.SESSION_TRANSACTED)
        await (await transacted.create_producer()).send("x", destination="quotes")
        assert broker.has_queue("quotes") and broker.queue("quotes").size == 0
        assert destinations(await advisories(watcher)) == [(0, "queue://quotes")]
        await transacted.rollback()
        assert broker.has_queue("quotes") and broker.queue("quotes").size == 0


async def test_a_connection_advisory_goes_out_when_the_connection_opens() -> None:
    """ActiveMQ sends it right after the connect; it waited for the broker's next operation on any connection (issue
    42): a STOMP client that only connects was never announced until something else happened."""
    from support.stomp_helpers import RawStompClient

    from minibroker.plugins.stomp import start_stomp_server

    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        watcher = await session.create_consumer(connection_advisory_topic())
        await watcher.receive(timeout=1)  # its own connection's
        server = await start_stomp_server(broker)
        try:
            stomp = await RawStompClient.open(server.port, client_id="announced")
            advisory = await watcher.receive(timeout=1)
            assert advisory is not None and data_structure(advisory.message)["clientId"] == "announced"  # type: ignore[index]
            await stomp.close()
        finally:
            await server.close()


async def test_a_subscriber_to_everything_gets_the_master_broker_advisory_first() -> None:
    """``topic://>`` reads ActiveMQ.Advisory.MasterBroker, whose last image ActiveMQ replays to it first (issue 42: it
    got none); an MQTT ``#`` subscriber too, with an empty payload (an advisory has no content)."""
    from support.mqtt_helpers import Paho

    from minibroker.plugins.mqtt import start_mqtt_server

    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        everything = await session.create_consumer("topic://>")
        first = await everything.receive(timeout=1)
        assert first is not None and str(first.destination) == "topic://ActiveMQ.Advisory.MasterBroker"
        server = await start_mqtt_server(broker)
        try:
            mqtt = await Paho.connect(server.port, "everything")
            await mqtt.subscribe("#", qos=0)
            got = await mqtt.next()
            assert (got.topic, got.payload) == ("ActiveMQ/Advisory/MasterBroker", b"")
            await mqtt.disconnect()
        finally:
            await server.close()
