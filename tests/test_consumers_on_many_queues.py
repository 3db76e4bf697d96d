"""Consumers on several queues (``orders.*.in``, ``qa,qb``): one window, each message's fate settled in the queue
it came from. The visible behaviour replays from the ``wildcard_queue_*`` and ``composite_consumer*`` recordings;
these tests push on what the recordings cannot show (the broker's own bookkeeping) and on the corners."""

from __future__ import annotations

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, connect
from minibroker.redelivery import RedeliveryPolicy


def sizes(broker: Broker, *queues: str) -> list[tuple[int, int]]:
    """(size, in flight) per queue."""
    return [(broker.queue(q).size, broker.queue(q).inflight) for q in queues]


async def test_one_window_across_queues_and_later_queues_join() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        producer = await session.create_producer()
        await producer.send("a1", destination="orders.a.in")
        await producer.send("b1", destination="orders.b.in")
        await producer.send("x1", destination="orders.b.out")
        consumer = await session.create_consumer("orders.*.in", prefetch=2)
        await producer.send("c1", destination="orders.c.in")  # a queue made after the consumer: it joins
        assert sizes(broker, "orders.a.in", "orders.b.in", "orders.c.in") == [(1, 1), (1, 1), (1, 0)]
        first = [await consumer.receive(timeout=1) for _ in range(2)]
        assert sorted(m.body for m in first if m is not None) == ["a1", "b1"]
        assert first[-1] is not None
        await first[-1].acknowledge()  # frees the window: c1 comes
        last = await consumer.receive(timeout=1)
        assert last is not None and last.body == "c1"
        assert broker.queue("orders.b.out").size == 1
        assert [broker.queue(q).consumers for q in ("orders.a.in", "orders.c.in", "orders.b.out")] == [1, 1, 0]


async def test_closing_gives_each_message_back_to_its_own_queue() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        producer = await session.create_producer()
        await producer.send("a1", destination="qa")
        await producer.send("b1", destination="qb")
        consumer = await session.create_consumer("qa,qb")
        got = [await consumer.receive(timeout=1) for _ in range(2)]
        assert all(m is not None for m in got)
        await consumer.close()
        assert sizes(broker, "qa", "qb") == [(1, 0), (1, 0)]
        again = await session.create_consumer("qb")
        msg = await again.receive(timeout=1)
        assert msg is not None and msg.body == "b1" and msg.redelivered


async def test_a_copy_in_each_queue_is_two_deliveries_with_one_id() -> None:
    """A composite send to two queues the consumer reads: both copies arrive, and each ack takes one of them."""
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session(AckMode.INDIVIDUAL_ACKNOWLEDGE)
        consumer = await session.create_consumer("qa,qb")
        await (await session.create_producer()).send("both", destination="qa,qb")
        first, second = await consumer.receive(timeout=1), await consumer.receive(timeout=1)
        assert first is not None and second is not None and first.message_id == second.message_id
        assert sizes(broker, "qa", "qb") == [(1, 1), (1, 1)]
        await first.acknowledge()
        assert sorted(s for s, _ in sizes(broker, "qa", "qb")) == [0, 1]
        await second.acknowledge()
        assert sizes(broker, "qa", "qb") == [(0, 0), (0, 0)]


async def test_purging_one_queue_leaves_what_is_held_from_the_others() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session(AckMode.INDIVIDUAL_ACKNOWLEDGE)
        producer = await session.create_producer()
        await producer.send("a1", destination="p.a")
        await producer.send("b1", destination="p.b")
        consumer = await session.create_consumer("p.>")
        got = [await consumer.receive(timeout=1) for _ in range(2)]
        assert broker.purge("p.a") == 1
        assert sizes(broker, "p.a", "p.b") == [(0, 0), (1, 1)]
        b1 = next(m for m in got if m is not None and m.body == "b1")
        await b1.acknowledge()
        assert sizes(broker, "p.b")[0] == (0, 0)


async def test_poison_goes_to_the_dead_letter_queue_of_the_message_and_is_counted_there() -> None:
    policy = RedeliveryPolicy(maximum_redeliveries=0)
    clock = ManualClock(autojump=True)
    async with Broker(clock=clock) as broker, await connect(broker, redelivery_policy=policy) as conn:
        session = await conn.create_session(AckMode.SESSION_TRANSACTED)
        producer = await session.create_producer()
        await producer.send("b1", destination="d.b")
        await session.commit()
        consumer = await session.create_consumer("d.*")
        msg = await consumer.receive(timeout=1)
        assert msg is not None and msg.body == "b1"
        await session.rollback()  # no redelivery allowed: poisoned
        assert broker.queue("d.b").size == 0
        assert [m.body for m in broker.queue("ActiveMQ.DLQ").browse()] == ["b1"]
        assert [(r.body, r.destination) for r in broker.dead_letters()] == [("b1", "queue://d.b")]


async def test_temporary_and_durable_queues_are_not_read_by_a_wildcard() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker, client_id="c") as conn:
        session = await conn.create_session()
        temp = await session.create_temporary_queue()
        await session.create_durable_subscriber("topic://t", "d")
        everything = await session.create_consumer(">")
        producer = await session.create_producer()
        await producer.send("to-temp", destination=temp)
        await producer.send("to-durable", destination="topic://t")
        await producer.send("plain", destination="plain")
        got = await everything.receive(timeout=1)
        assert got is not None and got.body == "plain"
        assert await everything.receive(timeout=1) is None
