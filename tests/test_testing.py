"""Fault injection and the assertion helpers, through the plugin's fixtures (virtual time, autojump)."""

from __future__ import annotations

import itertools

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, connect
from minibroker.errors import TransactionRolledBack
from minibroker.testing import (
    assert_dead_lettered,
    crash_connection,
    dead_letters,
    delivery_history,
    wait_for_queue_size,
)


async def send(conn: Connection, queue: str, *bodies: str) -> list[str]:
    session = await conn.create_session()
    producer = await session.create_producer(queue)
    return [await producer.send(body) for body in bodies]


class TestDefaultRedeliverySchedule:
    @pytest.mark.minibroker(allow_dead_letters=True)
    async def test_seven_deliveries_then_the_dlq(
        self, minibroker: Broker, minibroker_connection: Connection, manual_clock: ManualClock
    ) -> None:
        """ActiveMQ's default policy: the first delivery and 6 redeliveries one second apart, then ActiveMQ.DLQ.
        Runs in virtual time (autojump): the hours-of-backoff case costs no wall time either."""
        [message_id] = await send(minibroker_connection, "orders", "order-1")
        session = await minibroker_connection.create_session(AckMode.SESSION_TRANSACTED)
        consumer = await session.create_consumer("orders")
        times = []
        while await consumer.receive(timeout=60) is not None:
            times.append(manual_clock.elapsed)
            await session.rollback()
        assert len(times) == 7
        assert [round(b - a, 3) for a, b in itertools.pairwise(times)] == [1.0] * 6
        letter = assert_dead_lettered(minibroker, message_id, cause_contains="Delivery[7] exceeds redelivery policy")
        assert letter.queue == "ActiveMQ.DLQ" and letter.original_destination is not None
        history = delivery_history(minibroker, message_id)
        assert history.redelivery_delays == [1.0] * 6
        assert history.outcome == "dead-lettered"
        assert "history of" in str(history)


class TestFaults:
    async def test_next_commit_fails(self, minibroker: Broker, minibroker_connection: Connection) -> None:
        """fail_next_commit: the commit raises TransactionRolledBack and its sends are discarded; the next commit
        works."""
        session = await minibroker_connection.create_session(AckMode.SESSION_TRANSACTED)
        producer = await session.create_producer("q")
        await producer.send("lost")
        minibroker.fail_next_commit()
        with pytest.raises(TransactionRolledBack):
            await session.commit()
        assert minibroker.queue("q").size == 0
        await producer.send("kept")
        await session.commit()
        assert [m.body for m in minibroker.queue("q").browse()] == ["kept"]

    async def test_crash_between_receive_and_ack(self, minibroker: Broker) -> None:
        """A consumer's process dies after receive, before its ack: the message comes back, redelivered."""
        producer_conn = await connect(minibroker)
        await send(producer_conn, "q", "m1")
        worker = await connect(minibroker)
        session = await worker.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        consumer = await session.create_consumer("q")
        assert (await consumer.receive(timeout=1)) is not None
        crash_connection(worker)
        assert worker.closed
        other = await (await producer_conn.create_session()).create_consumer("q")
        again = await other.receive(timeout=1)
        assert again is not None and again.redelivered and again.delivery_count == 2
        await producer_conn.close()

    async def test_pause_and_resume(self, minibroker: Broker, minibroker_connection: Connection) -> None:
        """A paused queue accepts sends but dispatches nothing until resumed."""
        minibroker.pause("q")
        await send(minibroker_connection, "q", "a", "b")
        consumer = await (await minibroker_connection.create_session()).create_consumer("q")
        assert await consumer.receive(timeout=5) is None
        minibroker.resume("q")
        assert (await consumer.receive(timeout=0)) is not None

    async def test_throttle(
        self, minibroker: Broker, minibroker_connection: Connection, manual_clock: ManualClock
    ) -> None:
        """A throttled queue dispatches one message per interval of the broker's clock."""
        minibroker.throttle("q", 2.0)
        await send(minibroker_connection, "q", "a", "b", "c")
        consumer = await (await minibroker_connection.create_session()).create_consumer("q")
        arrivals = []
        for _ in range(3):
            msg = await consumer.receive(timeout=10)
            assert msg is not None
            arrivals.append(round(manual_clock.elapsed, 3))
        assert arrivals == [0.0, 2.0, 4.0]

    async def test_restart_loses_memory_and_clients_reconnect(self, minibroker: Broker) -> None:
        """restart() drops every connection; a fault-tolerant client reconnects and keeps working; the in-memory
        broker starts empty, as a non-persistent ActiveMQ does."""
        conn = await connect(minibroker, fault_tolerant=True)
        await send(conn, "q", "before")
        session = await conn.create_session()
        consumer = await session.create_consumer("other")
        await minibroker.restart()
        await conn.wait_reconnected()
        assert not minibroker.queue("q").exists
        await send(conn, "other", "after")
        msg = await consumer.receive(timeout=1)
        assert msg is not None and msg.body == "after"
        await conn.close()


class TestHelpers:
    async def test_wait_for_queue_size(self, minibroker: Broker, minibroker_connection: Connection) -> None:
        """wait_for_queue_size moves virtual time until a listener has drained the queue."""
        await send(minibroker_connection, "q", *[f"m{i}" for i in range(5)])
        consumer = await (await minibroker_connection.create_session()).create_consumer("q")
        received = []
        consumer.set_listener(lambda msg: received.append(msg.body))
        await wait_for_queue_size(minibroker, "q", 0)
        assert received == [f"m{i}" for i in range(5)]

    async def test_wait_for_queue_size_explains_a_timeout(
        self, minibroker: Broker, minibroker_connection: Connection
    ) -> None:
        """When the size never comes, the failure shows the queue's counters."""
        await send(minibroker_connection, "q", "stuck")
        with pytest.raises(AssertionError, match=r"holds 1 message\(s\), not 0.*enqueued 1"):
            await wait_for_queue_size(minibroker, "q", 0, timeout=3)

    async def test_settled_reports_what_is_pending(
        self, minibroker: Broker, minibroker_connection: Connection, manual_clock: ManualClock
    ) -> None:
        """settled() returns once the listener has nothing left; dead_letters lists nothing for a clean run."""
        await send(minibroker_connection, "q", "a")
        consumer = await (await minibroker_connection.create_session()).create_consumer("q")
        seen = []
        consumer.set_listener(lambda msg: seen.append(msg.body))
        await minibroker.settled()
        assert seen == ["a"] and dead_letters(minibroker) == []
        assert minibroker.pending_work() == []
