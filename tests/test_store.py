"""Persistence: the core's journal, the SQLite and memory stores, and brokers restarted on the same store.

Every test here runs in process (virtual time where time matters); the process-level proof (SIGKILL in the middle of
a stream) is in ``test_kill9.py``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from minibroker import Broker, Destination, DestinationPolicy, ManualClock, Message
from minibroker._core.broker import BrokerCore
from minibroker._core.commands import AckType, ConsumerInfo, MessageAck
from minibroker._core.journal import Journal, Purged, Redelivered, Removed, Scheduled, Stored, Unscheduled
from minibroker.client import AckMode, RedeliveryPolicy, connect
from minibroker.errors import StoreError
from minibroker.plugins.redelivery import RedeliveryPlugin
from minibroker.store import DATABASE_NAME, MemoryStore, SqliteStore, decode_message, encode_message

Q = Destination.queue("orders")
NO_CLIENT_RETRY = RedeliveryPolicy(maximum_redeliveries=0)


def msg(n: int, *, persistent: bool = True, dest: Destination = Q, **kw: object) -> Message:
    return Message(f"ID:m-{n}", dest, f"body-{n}", persistent=persistent, **kw)  # type: ignore[arg-type]


# -- the core's journal (pure) --------------------------------------------------------------------------------------


class TestJournal:
    def core(self) -> BrokerCore:
        return BrokerCore(ManualClock(), journal=Journal())

    def test_persistent_sends_are_journaled_non_persistent_ones_never(self) -> None:
        core = self.core()
        c = core.add_connection()
        core.send(c, msg(1))
        core.send(c, msg(2, persistent=False))
        core.send(c, msg(3, dest=Destination.topic("prices")))
        assert core.journal == [Stored("orders", 0, core.queues["orders"].entries[0].message, 0)]

    def test_an_ack_removes_and_a_close_raises_the_counter(self) -> None:
        core = self.core()
        c = core.add_connection()
        for n in range(3):
            core.send(c, msg(n))
        consumer = core.add_consumer(c, ConsumerInfo(Q, prefetch=10))
        assert core.journal is not None
        core.journal.clear()
        core.ack(c, MessageAck(consumer, AckType.STANDARD, "ID:m-0", message_count=1))
        assert core.journal == [Removed("orders", 0)]
        core.journal.clear()
        core.remove_connection(c, None)  # a dropped transport: everything held counts as delivered
        assert core.journal == [Redelivered("orders", 1, 1), Redelivered("orders", 2, 1)]

    def test_transacted_sends_and_acks_are_journaled_at_commit_only(self) -> None:
        core = self.core()
        c = core.add_connection()
        core.send(c, msg(0))
        consumer = core.add_consumer(c, ConsumerInfo(Q, prefetch=10))
        assert core.journal is not None
        core.journal.clear()
        txn = core.begin(c)
        core.send(c, msg(1), txn)
        core.ack(c, MessageAck(consumer, AckType.STANDARD, "ID:m-0", message_count=1, transaction_id=txn))
        assert core.journal == []
        core.commit(c, txn)
        assert [type(op) for op in core.journal] == [Removed, Stored]
        txn = core.begin(c)
        core.send(c, msg(2), txn)
        core.journal.clear()
        core.rollback(c, txn)
        assert core.journal == []

    def test_a_dead_letter_move_is_one_batch(self) -> None:
        core = self.core()
        c = core.add_connection()
        core.send(c, msg(0))
        consumer = core.add_consumer(c, ConsumerInfo(Q, prefetch=10))
        assert core.journal is not None
        core.journal.clear()
        core.ack(c, MessageAck(consumer, AckType.POISON, "ID:m-0", poison_cause="boom"))
        assert [type(op) for op in core.journal] == [Removed, Stored]
        assert core.journal[1].queue == "ActiveMQ.DLQ"  # type: ignore[union-attr]

    def test_purge_and_schedule(self) -> None:
        core = BrokerCore(ManualClock(), journal=Journal(), scheduler_support=True)
        c = core.add_connection()
        core.send(c, msg(0))
        core.purge("orders")
        assert core.journal is not None
        assert type(core.journal[-1]) is Purged
        core.journal.clear()
        core.send(c, msg(1, properties={"AMQ_SCHEDULED_DELAY": 1000}))
        assert [type(op) for op in core.journal] == [Scheduled]

    def test_no_journal_without_a_store(self) -> None:
        core = BrokerCore(ManualClock())
        c = core.add_connection()
        core.send(c, msg(0))
        assert core.journal is None and core.queues["orders"].journal is None


# -- the stores -----------------------------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SqliteStore | MemoryStore:
    if request.param == "sqlite":
        s = SqliteStore(tmp_path / "data")
        request.addfinalizer(s.close)
        return s
    return MemoryStore()


class TestStores:
    def test_apply_and_load(self, store: SqliteStore | MemoryStore) -> None:
        m0, m1, m2 = msg(0), msg(1, priority=7, properties={"k": 1, "b": b"\x00"}), msg(2)
        store.apply(
            [
                Stored("orders", 0, m0, 0),
                Stored("orders", 1, m1, 0),
                Stored("orders", 2, m2, 0),
                Stored("other", 0, msg(9), 3),
            ]
        )
        store.apply([Removed("orders", 0), Redelivered("orders", 2, 4)])
        state = store.load()
        assert [(s.queue, s.seq, s.redelivery_counter) for s in state.messages] == [
            ("orders", 1, 0),
            ("orders", 2, 4),
            ("other", 0, 3),
        ]
        loaded = state.messages[0].message
        assert (loaded.message_id, loaded.priority, dict(loaded.properties)) == ("ID:m-1", 7, {"k": 1, "b": b"\x00"})

    def test_stored_then_removed_in_one_batch_never_lands(self, store: SqliteStore | MemoryStore) -> None:
        store.apply(
            [
                Stored("orders", 0, msg(0), 0),
                Redelivered("orders", 0, 1),
                Removed("orders", 0),
                Stored("orders", 1, msg(1), 0),
                Redelivered("orders", 1, 2),
            ]
        )
        assert [(s.seq, s.redelivery_counter) for s in store.load().messages] == [(1, 2)]

    def test_purge_applies_in_order(self, store: SqliteStore | MemoryStore) -> None:
        store.apply(
            [
                Stored("orders", 0, msg(0), 0),
                Stored("keep", 0, msg(1), 0),
                Purged("orders"),
                Stored("orders", 1, msg(2), 0),
            ]
        )
        assert [(s.queue, s.seq) for s in store.load().messages] == [("keep", 0), ("orders", 1)]

    def test_scheduled(self, store: SqliteStore | MemoryStore) -> None:
        store.apply([Scheduled(1, 10.0, msg(0), 2), Scheduled(2, 11.0, msg(1), 0)])
        store.apply([Unscheduled(1)])
        assert [(j.job, j.due, j.redelivery_counter) for j in store.load().scheduled] == [(2, 11.0, 0)]

    def test_message_encoding_round_trip(self) -> None:
        m = Message(
            "ID:x",
            Q,
            "héllo",
            {"a": 1, "b": 2.5, "c": None, "d": True},
            9,
            True,
            12.5,
            99.0,
            "corr",
            Destination.topic("replies"),
            "type",
            "group",
            3,
            "producer",
            7,
            Destination.queue("orig"),
        )
        back = decode_message(encode_message(m))
        assert [getattr(back, f) for f in m.__slots__] == [getattr(m, f) for f in m.__slots__]  # type: ignore[attr-defined]


class TestSqliteStore:
    def test_wal_mode_and_one_broker_per_directory(self, tmp_path: Path) -> None:
        store = SqliteStore(tmp_path)
        try:
            assert store._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            with pytest.raises(StoreError, match="in use by another broker"):
                SqliteStore(tmp_path)
        finally:
            store.close()
        SqliteStore(tmp_path).close()  # released on close

    def test_the_database_itself_is_locked(self, tmp_path: Path) -> None:
        """A deleted lock file does not let a second broker open the same messages (issue 15)."""
        from minibroker._data_dir_lock import LOCK_NAME

        store = SqliteStore(tmp_path)
        try:
            (tmp_path / LOCK_NAME).unlink()
            with pytest.raises(StoreError, match="in use by another broker"):
                SqliteStore(tmp_path)
            with (
                pytest.raises(sqlite3.OperationalError, match="locked"),
                sqlite3.connect(tmp_path / DATABASE_NAME) as db,
            ):
                db.execute("SELECT count(*) FROM messages").fetchone()
        finally:
            store.close()
        SqliteStore(tmp_path).close()

    def test_a_failed_batch_changes_nothing(self, tmp_path: Path) -> None:
        store = SqliteStore(tmp_path)
        try:
            store.apply([Stored("orders", 0, msg(0), 0)])
            with pytest.raises(StoreError):
                # a message the encoding cannot carry fails the batch halfway: the first insert is rolled back
                store.apply([Removed("orders", 0), Stored("orders", 1, msg(1, priority=42), 0)])
            assert [s.seq for s in store.load().messages] == [0]
        finally:
            store.close()

    def test_reopen(self, tmp_path: Path) -> None:
        store = SqliteStore(tmp_path, synchronous="full")
        store.apply([Stored("orders", 5, msg(5), 1)])
        store.close()
        again = SqliteStore(tmp_path)
        try:
            assert [(s.seq, s.redelivery_counter, s.message.body) for s in again.load().messages] == [(5, 1, "body-5")]
        finally:
            again.close()

    def test_bad_directory(self, tmp_path: Path) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("not a directory")
        with pytest.raises(StoreError, match="cannot open"):
            SqliteStore(blocker)


# -- brokers on a store ---------------------------------------------------------------------------------------------


async def send_all(broker: Broker, queue: str, bodies: list[str], **kw: object) -> None:
    async with await connect(broker) as conn:
        session = await conn.create_session()
        producer = await session.create_producer(queue)
        for body in bodies:
            await producer.send(body, **kw)  # type: ignore[arg-type]


class TestBrokerRestart:
    async def test_unacked_persistent_messages_come_back_in_order_with_counters(self, tmp_path: Path) -> None:
        clock = ManualClock(autojump=True)
        broker = Broker(clock=clock, data_dir=tmp_path)
        async with broker:
            await send_all(broker, "orders", [f"m{i}" for i in range(6)])
            await send_all(broker, "orders", ["volatile"], persistent=False)
            conn = await connect(broker, redelivery_policy=NO_CLIENT_RETRY)
            session = await conn.create_session(AckMode.INDIVIDUAL_ACKNOWLEDGE)
            consumer = await session.create_consumer("orders", prefetch=3)
            received = [await consumer.receive(timeout=1) for _ in range(3)]
            assert [m.body for m in received if m] == ["m0", "m1", "m2"]
            assert received[1] is not None
            await received[1].acknowledge()
            broker.drop_connections()  # the messages held are released with their counter raised
            before = {e.message.body: e.redelivery_counter for e in broker.core.queues["orders"].entries.values()}
            assert before["m0"] == before["m2"] == 1 and "m1" not in before
        broker = Broker(clock=clock, data_dir=tmp_path)
        async with broker:
            assert [m.body for m in broker.queue("orders").browse()] == ["m0", "m2", "m3", "m4", "m5"]
            async with await connect(broker) as conn:
                consumer = await (await conn.create_session()).create_consumer("orders")
                got = [await consumer.receive(timeout=1) for _ in range(4)]
                assert [(m.body, m.delivery_count) for m in got if m] == [
                    (body, before[body] + 1) for body in ("m0", "m2", "m3", "m4")
                ]
                # new sends continue the sequence after the restored ones
                await send_all(broker, "orders", ["after"])
                rest = [await consumer.receive(timeout=1) for _ in range(2)]
                assert [m.body for m in rest if m] == ["m5", "after"]
            assert broker.queue("orders").size == 0
            assert broker.store is not None and broker.store.load().messages == ()

    async def test_restart_keeps_persistent_messages(self, tmp_path: Path) -> None:
        async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
            await send_all(broker, "orders", ["a", "b"])
            await send_all(broker, "orders", ["np"], persistent=False)
            conn = await connect(broker)
            consumer = await (await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)).create_consumer("orders")
            got = await consumer.receive(timeout=1)
            assert got is not None and got.body == "a"
            await broker.restart()
            assert conn.closed
            assert [m.body for m in broker.queue("orders").browse()] == ["a", "b"]
            assert broker.history(got.message_id) == ()  # a new broker state
            async with await connect(broker) as conn:
                consumer = await (await conn.create_session()).create_consumer("orders")
                again = await consumer.receive(timeout=5)
                assert again is not None and again.body == "a" and again.delivery_count == 2

    async def test_restart_without_a_store_loses_everything(self) -> None:
        async with Broker(clock=ManualClock(autojump=True)) as broker:
            await send_all(broker, "orders", ["a"])
            await broker.restart()
            assert broker.queue("orders").size == 0

    async def test_memory_store_one_batch_per_call(self) -> None:
        store = MemoryStore()
        async with Broker(clock=ManualClock(autojump=True), store=store) as broker:
            async with await connect(broker) as conn:
                session = await conn.create_session(AckMode.SESSION_TRANSACTED)
                producer = await session.create_producer("orders")
                for i in range(10):
                    await producer.send(f"m{i}")
                before = store.batches
                await session.commit()
                assert store.batches == before + 1 and len(store.messages) == 10
            await broker.restart()
            assert broker.queue("orders").size == 10

    async def test_acked_messages_never_come_back(self, tmp_path: Path) -> None:
        clock = ManualClock(autojump=True)
        async with Broker(clock=clock, data_dir=tmp_path) as broker:
            await send_all(broker, "orders", [f"m{i}" for i in range(100)])
            async with await connect(broker) as conn:
                consumer = await (await conn.create_session()).create_consumer("orders")
                for _ in range(40):
                    assert await consumer.receive(timeout=1) is not None
        async with Broker(clock=clock, data_dir=tmp_path) as broker:
            assert [m.body for m in broker.queue("orders").browse()][:2] == ["m40", "m41"]
            assert broker.queue("orders").size == 60

    async def test_dead_letters_and_purge_are_persisted(self, tmp_path: Path) -> None:
        clock = ManualClock(autojump=True)
        async with Broker(clock=clock, data_dir=tmp_path) as broker:
            await send_all(broker, "orders", ["poison", "other"])
            await send_all(broker, "junk", ["j1", "j2"])
            async with await connect(broker, redelivery_policy=NO_CLIENT_RETRY) as conn:
                session = await conn.create_session(AckMode.SESSION_TRANSACTED)
                consumer = await session.create_consumer("orders", prefetch=1)
                assert (await consumer.receive(timeout=1)) is not None
                await session.rollback()  # maximum_redeliveries=0: poison-acked to the DLQ
                await session.close()
            assert broker.queue("junk").purge() == 2
        async with Broker(clock=clock, data_dir=tmp_path) as broker:
            dlq = broker.queue("ActiveMQ.DLQ").browse()
            assert [m.body for m in dlq] == ["poison"] and "dlqDeliveryFailureCause" in dlq[0].properties
            assert [m.body for m in broker.queue("orders").browse()] == ["other"]
            assert broker.queue("junk").size == 0

    async def test_expired_messages_are_removed_for_good(self, tmp_path: Path) -> None:
        clock = ManualClock(autojump=True)
        async with Broker(clock=clock, data_dir=tmp_path) as broker:
            await send_all(broker, "orders", ["short"], ttl=5.0)
            await send_all(broker, "orders", ["long"])
            await clock.advance(40)  # the expiry sweep (every 30 s) dead-letters it
            assert [m.body for m in broker.queue("orders").browse()] == ["long"]
        async with Broker(clock=clock, data_dir=tmp_path) as broker:
            assert [m.body for m in broker.queue("orders").browse()] == ["long"]
            assert [m.body for m in broker.queue("ActiveMQ.DLQ").browse()] == ["short"]

    async def test_expiring_messages_from_the_store_are_swept(self, tmp_path: Path) -> None:
        clock = ManualClock(autojump=True)
        async with Broker(clock=clock, data_dir=tmp_path) as broker:
            await send_all(broker, "orders", ["short"], ttl=5.0)
        async with Broker(clock=clock, data_dir=tmp_path) as broker:
            assert broker.queue("orders").size == 1
            await clock.advance(40)
            assert broker.queue("orders").size == 0 and broker.queue("orders").expired == 1

    async def test_broker_redelivery_survives_a_restart(self, tmp_path: Path) -> None:
        """A message the broker redelivery plugin scheduled is kept in the store until it comes due."""
        clock = ManualClock(autojump=True)

        def make() -> Broker:
            return Broker(
                clock=clock,
                data_dir=tmp_path,
                scheduler_support=True,
                plugins=[RedeliveryPlugin(RedeliveryPolicy(maximum_redeliveries=3, initial_redelivery_delay=10.0))],
            )

        async with make() as broker:
            await send_all(broker, "orders", ["retry-me"])
            async with await connect(broker, redelivery_policy=NO_CLIENT_RETRY) as conn:
                session = await conn.create_session(AckMode.SESSION_TRANSACTED)
                consumer = await session.create_consumer("orders")
                assert await consumer.receive(timeout=1) is not None
                await session.rollback()
                await session.close()
            assert broker.queue("orders").size == 0 and len(broker.core._scheduled) == 1
        async with make() as broker:
            assert broker.queue("orders").size == 0
            async with await connect(broker) as conn:
                consumer = await (await conn.create_session()).create_consumer("orders")
                again = await consumer.receive(timeout=30)
                assert again is not None and again.body == "retry-me" and again.delivery_count == 2
                assert again.properties["redeliveryDelay"] == 10000

    async def test_priority_order_survives(self, tmp_path: Path) -> None:
        clock = ManualClock(autojump=True)
        policies = {">": DestinationPolicy(prioritized_messages=True)}
        async with Broker(clock=clock, data_dir=tmp_path, policies=policies) as broker:
            for priority in (1, 9, 4):
                await send_all(broker, "orders", [f"p{priority}"], priority=priority)
        async with Broker(clock=clock, data_dir=tmp_path, policies=policies) as broker, await connect(broker) as conn:
            consumer = await (await conn.create_session()).create_consumer("orders")
            bodies = [(await consumer.receive(timeout=1)) for _ in range(3)]
            assert [m.body for m in bodies if m] == ["p9", "p4", "p1"]

    def test_data_dir_and_store_are_exclusive(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="not both"):
            Broker(data_dir=tmp_path, store=MemoryStore())


class TestEpochWithAStore:
    async def test_a_restart_with_a_store_keeps_the_epoch(self) -> None:
        """Messages and sequence numbers survive a restart with a store, so the epoch Spark compares does too;
        without a store a restart loses everything and the epoch changes."""
        from minibroker import Broker, ManualClock
        from minibroker.store import MemoryStore

        async with Broker(clock=ManualClock(), store=MemoryStore()) as kept:
            before = kept.epoch
            await kept.restart()
            assert kept.epoch == before
        async with Broker(clock=ManualClock()) as lost:
            before = lost.epoch
            await lost.restart()
            assert lost.epoch != before

    async def test_the_epoch_is_kept_on_disk(self, tmp_path: Path) -> None:
        """A new broker process on the same data directory reports the same epoch."""
        from minibroker import Broker, ManualClock

        async with Broker(clock=ManualClock(), data_dir=tmp_path) as first:
            epoch = first.epoch
        async with Broker(clock=ManualClock(), data_dir=tmp_path) as second:
            assert second.epoch == epoch
