"""A store write that fails (a full disk) fails its call as a whole and leaves memory as the disk is (issue 15,
item 6): a send reported failed is never delivered, an ack the disk never saw leaves the message with its consumer
(ackable again once the disk has room), the broker keeps serving reads, and a restart finds what memory had."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.stores import FullDisk
from support.transports import TRANSPORTS, connect_to

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, Consumer, Session
from minibroker.errors import StoreError


@pytest.fixture
def store(tmp_path: Path) -> FullDisk:
    return FullDisk(tmp_path)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_send_the_disk_refused_is_never_delivered(store: FullDisk, transport: str) -> None:
    async with Broker(clock=ManualClock(autojump=True), store=store) as broker:
        async with await connect_to(broker, transport) as conn:
            session = await conn.create_session()
            consumer = await session.create_consumer("orders")
            producer = await session.create_producer("orders")
            await producer.send("kept")
            assert (await consumer.receive(timeout=1)) is not None
            store.full = True
            with pytest.raises(StoreError, match="disk is full"):
                await producer.send("refused")
            assert await consumer.receive(timeout=0.2) is None  # not delivered, not even later
            assert "refused" not in [m.body for m in broker.queue("orders").browse()]
            await producer.send("not persistent", persistent=False)  # nothing to write: still served
            received = await consumer.receive(timeout=1)
            assert received is not None and received.body == "not persistent"
            store.full = False
            await producer.send("after")
            received = await consumer.receive(timeout=1)
            assert received is not None and received.body == "after"
        await broker.restart()
        assert "refused" not in [m.body for m in broker.queue("orders").browse()]


async def ack_refused(conn: Connection, store: FullDisk) -> tuple[Session, Consumer]:
    """A CLIENT session and consumer of ``orders`` whose ack of its one message the full disk refused."""
    session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
    consumer = await session.create_consumer("orders")
    await (await session.create_producer("orders")).send("m")
    msg = await consumer.receive(timeout=1)
    assert msg is not None
    store.full = True
    await msg.acknowledge()
    return session, consumer


async def test_an_ack_the_disk_refused_leaves_the_message_with_its_consumer(store: FullDisk) -> None:
    """Acks are asynchronous (the refusal reaches the exception listener); the message stays in flight, as on disk,
    and goes back to the queue when its consumer closes, to be delivered again."""
    async with Broker(clock=ManualClock(autojump=True), store=store) as broker:
        async with await connect_to(broker, "memory") as conn:
            session, consumer = await ack_refused(conn, store)
            assert [type(e) for e in conn.async_errors] == [StoreError]
            stats = broker.queue("orders").statistics()
            assert (stats.size, stats.inflight, stats.dequeued) == (1, 1, 0)  # as on disk: not consumed
            store.full = False
            await consumer.close()
            again = await session.create_consumer("orders")
            redelivered = await again.receive(timeout=1)
            assert redelivered is not None and redelivered.body == "m" and redelivered.redelivered
            await redelivered.acknowledge()
            stats = broker.queue("orders").statistics()
            assert (stats.size, stats.dequeued) == (0, 1)
        await broker.restart()
        assert broker.queue("orders").size == 0


async def test_a_restart_after_a_refused_ack_brings_the_message_back_as_memory_had_it(store: FullDisk) -> None:
    async with Broker(clock=ManualClock(autojump=True), store=store) as broker:
        async with await connect_to(broker, "memory") as conn:
            await ack_refused(conn, store)
            assert conn.async_errors and broker.queue("orders").size == 1
            store.full = False
        await broker.restart()
        assert [m.body for m in broker.queue("orders").browse()] == ["m"]  # memory said so, and so did the disk


async def test_a_refused_commit_sends_nothing_and_reads_go_on(store: FullDisk) -> None:
    async with (
        Broker(clock=ManualClock(autojump=True), store=store) as broker,
        await connect_to(broker, "memory") as conn,
    ):
        plain = await conn.create_session()
        await (await plain.create_producer("orders")).send("before")
        txn = await conn.create_session(AckMode.SESSION_TRANSACTED)
        producer = await txn.create_producer("orders")
        await producer.send("t1")
        await producer.send("t2")
        store.full = True
        with pytest.raises(StoreError):
            await txn.commit()
        assert [m.body for m in broker.queue("orders").browse()] == ["before"]  # browsing still works
        consumer = await plain.create_consumer("orders")
        received = await consumer.receive(timeout=1)  # and so does receiving what is there
        assert received is not None and received.body == "before"


async def test_an_expiry_the_disk_refused_is_tried_again(store: FullDisk) -> None:
    """The broker's own work (here: expiring a message) that cannot be written is taken back and tried again a
    second later, not in a loop."""
    clock = ManualClock()
    async with Broker(clock=clock, store=store) as broker:
        async with await connect_to(broker, "memory") as conn:
            await (await (await conn.create_session()).create_producer("orders")).send("m", ttl=1.0)
        store.full = True
        await clock.advance(31.0)  # the expiry sweep (every 30 s, ActiveMQ's expireMessagesPeriod) fails
        assert broker.queue("orders").size == 1  # its expiry (and dead-letter copy) taken back
        store.full = False
        await clock.advance(1.0)
        assert broker.queue("orders").size == 0 and broker.queue("ActiveMQ.DLQ").size == 1


async def test_a_purge_the_disk_refused_leaves_the_queue_as_it_was(store: FullDisk) -> None:
    async with Broker(clock=ManualClock(autojump=True), store=store) as broker:
        async with await connect_to(broker, "memory") as conn:
            producer = await (await conn.create_session()).create_producer("orders")
            for i in range(3):
                await producer.send(f"m{i}")
        store.full = True
        with pytest.raises(StoreError):
            broker.queue("orders").purge()
        assert [m.body for m in broker.queue("orders").browse()] == ["m0", "m1", "m2"]
        store.full = False
        await broker.restart()
        assert broker.queue("orders").size == 3


async def test_a_scheduled_send_the_disk_refused_is_not_scheduled(store: FullDisk) -> None:
    clock = ManualClock()
    async with (
        Broker(clock=clock, store=store, scheduler_support=True) as broker,
        await connect_to(broker, "memory") as conn,
    ):
        producer = await (await conn.create_session()).create_producer("later")
        store.full = True
        with pytest.raises(StoreError):
            await producer.send("m", properties={"AMQ_SCHEDULED_DELAY": 5000})
        assert broker.scheduled_count == 0
        store.full = False
        await producer.send("kept", properties={"AMQ_SCHEDULED_DELAY": 5000})
        store.full = True
        await clock.advance(6)  # due, but its delivery cannot be written: the job stays, tried again
        assert broker.scheduled_count == 1 and broker.queue("later").size == 0
        store.full = False
        await clock.advance(1.5)
        assert broker.scheduled_count == 0 and broker.queue("later").size == 1


async def test_a_closed_consumer_s_counters_the_disk_refused_are_lowered_again(store: FullDisk) -> None:
    async with (
        Broker(clock=ManualClock(autojump=True), store=store) as broker,
        await connect_to(broker, "memory") as conn,
    ):
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        consumer = await session.create_consumer("orders")
        await (await session.create_producer("orders")).send("m")
        assert await consumer.receive(timeout=1) is not None
        store.full = True
        await consumer.close()  # it goes anyway; its message's raised counter is not on disk, so not in memory
        (entry,) = broker.core.queues["orders"].entries.values()
        assert entry.redelivery_counter == 0


async def test_durable_subscriptions_the_disk_refused_are_not_made_or_dropped(store: FullDisk) -> None:
    async with (
        Broker(clock=ManualClock(autojump=True), store=store) as broker,
        await connect_to(broker, "memory", client_id="app") as conn,
    ):
        session = await conn.create_session()
        store.full = True
        with pytest.raises(StoreError):
            await session.create_durable_subscriber("topic://prices", "refused")
        assert broker.durable_subscriptions() == []
        store.full = False
        subscriber = await session.create_durable_subscriber("topic://prices", "kept")
        await (await session.create_producer("topic://prices")).send("p1")
        await subscriber.close()
        store.full = True
        with pytest.raises(StoreError):
            await session.unsubscribe("kept")
        (view,) = broker.durable_subscriptions()
        assert view.name == "kept" and view.pending == 1  # still there, with what it keeps
        store.full = False
        again = await session.create_durable_subscriber("topic://prices", "kept")
        received = await again.receive(timeout=1)
        assert received is not None and received.body == "p1"
