"""A topic message is kept once for the durable subscriptions that are away (issue 31, item 1; topic_log.py): a
publish appends it to the topic's log, whatever their number, and each subscription keeps a position there until it
needs its messages. These tests count the work (entries made, rows journaled), and check that nothing is lost, nothing
acked comes back, and a failed store write takes the log back too; the durable recordings check the behaviour."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from support.stores import FullDisk

from minibroker import Broker, ManualClock
from minibroker._core.journal import JournalOp, Stored
from minibroker.client import AckMode, Connection, connect
from minibroker.errors import StoreError
from minibroker.store import MemoryStore


class CountingStore(MemoryStore):
    """A memory store that keeps every batch it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.applied: list[list[JournalOp]] = []

    def apply(self, ops: Sequence[JournalOp]) -> None:
        self.applied.append(list(ops))
        super().apply(ops)


async def subscribe_and_leave(conn: Connection, names: Sequence[str], topic: str = "topic://audit") -> None:
    session = await conn.create_session()
    for name in names:
        await (await session.create_durable_subscriber(topic, name)).close()
    await session.close()


async def test_a_publish_to_many_offline_subscriptions_is_one_entry_and_one_row() -> None:
    store = CountingStore()
    async with Broker(store=store, history_limit=0) as broker:
        async with await connect(broker, client_id="c") as conn:
            await subscribe_and_leave(conn, [f"s{i}" for i in range(200)])
        store.applied.clear()
        async with await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("topic://audit")
            await producer.send("one", persistent=True)
        rows = [op for batch in store.applied for op in batch if isinstance(op, Stored)]
        assert [(op.queue, op.message.body) for op in rows] == [("topic-log://audit", "one")]
        core = broker.core
        assert len(core.topics["audit"].log or ()) == 1
        assert all(len(d.queue.entries) == 0 for d in core.durables.values())  # no copy made
        assert {v.pending for v in broker.durable_subscriptions()} == {1}


async def test_offline_subscriptions_get_what_was_published_while_they_were_away_in_order() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        async with await connect(broker, client_id="c") as conn:
            await subscribe_and_leave(conn, ["early"])
            async with await connect(broker) as publisher:
                producer = await (await publisher.create_session()).create_producer("topic://audit")
                await producer.send("m0")
                await subscribe_and_leave(conn, ["late"])  # away from m1 on: reads the log from there
                await producer.send("m1")
                await producer.send("m2")
            session = await conn.create_session()
            for name, expected in (("early", ["m0", "m1", "m2"]), ("late", ["m1", "m2"])):
                consumer = await session.create_durable_subscriber("topic://audit", name)
                got = [m.body for m in [await consumer.receive(timeout=1) for _ in expected] if m is not None]
                assert got == expected
                assert await consumer.receive(timeout=0.1) is None
                await consumer.close()
        # each came back and took its messages: nothing left to keep once both were read
        log = broker.core.topics["audit"].log
        assert log is not None and len(log) == 0


async def test_a_browse_of_an_offline_subscription_shows_the_log_and_counts_it() -> None:
    async with Broker() as broker:
        async with await connect(broker, client_id="c") as conn:
            await subscribe_and_leave(conn, ["s"])
        async with await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("topic://audit")
            await producer.send("a")
            await producer.send("b")
        (view,) = broker.durable_subscriptions()
        assert view.pending == 2
        assert [m.body for m in broker.queue("durable://c/s").browse()] == ["a", "b"]
        (view,) = broker.durable_subscriptions()
        assert view.pending == 2  # the same count, now from its own queue


async def test_a_restart_keeps_positions_loses_nothing_and_brings_back_nothing_acked(tmp_path: Path) -> None:
    async with Broker(data_dir=tmp_path) as broker, await connect(broker, client_id="c") as conn:
        await subscribe_and_leave(conn, ["a", "b"])
        producer = await (await conn.create_session()).create_producer("topic://audit")
        for body in ("m0", "m1", "m2"):
            await producer.send(body, persistent=True)
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        consumer = await session.create_durable_subscriber("topic://audit", "a")
        received = [await consumer.receive(timeout=1) for _ in range(2)]
        assert [m.body for m in received if m is not None] == ["m0", "m1"]
        assert received[1] is not None
        await received[1].acknowledge()  # a has m2 left, and b all three
        await consumer.close()
        await producer.send("m3", persistent=True)  # both are away again
    async with Broker(data_dir=tmp_path) as broker:
        assert {v.name: v.pending for v in broker.durable_subscriptions()} == {"a": 2, "b": 4}
        async with await connect(broker, client_id="c") as conn:
            session = await conn.create_session()
            for name, expected in (("a", ["m2", "m3"]), ("b", ["m0", "m1", "m2", "m3"])):
                consumer = await session.create_durable_subscriber("topic://audit", name)
                got = [m.body for m in [await consumer.receive(timeout=1) for _ in expected] if m is not None]
                assert got == expected
                assert await consumer.receive(timeout=0.1) is None
                await consumer.close()
    async with Broker(data_dir=tmp_path) as broker:  # all read and acked: nothing comes back
        assert {v.name: v.pending for v in broker.durable_subscriptions()} == {"a": 0, "b": 0}


async def test_a_publish_and_a_return_the_disk_refused_are_taken_back(tmp_path: Path) -> None:
    store = FullDisk(tmp_path)
    async with (
        Broker(clock=ManualClock(autojump=True), store=store) as broker,
        await connect(broker, client_id="c") as conn,
    ):
        await subscribe_and_leave(conn, ["s"])
        producer = await (await conn.create_session()).create_producer("topic://audit")
        await producer.send("kept", persistent=True)
        store.full = True
        with pytest.raises(StoreError):
            await producer.send("refused", persistent=True)
        (view,) = broker.durable_subscriptions()
        assert view.pending == 1
        session = await conn.create_session()
        with pytest.raises(StoreError):
            await session.create_durable_subscriber("topic://audit", "s")
        (view,) = broker.durable_subscriptions()
        assert (view.active, view.pending) == (False, 1)  # still away, still reading the log
        assert broker.core.durables[("c", "s")].behind is not None
        store.full = False
        consumer = await session.create_durable_subscriber("topic://audit", "s")
        received = await consumer.receive(timeout=1)
        assert received is not None and received.body == "kept"
        assert await consumer.receive(timeout=0.1) is None
