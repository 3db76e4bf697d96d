"""Transacted sessions and client-side redelivery (semantics §4, §5): visibility of sends, commit/rollback of
receives, the blocking redelivery delay, non-blocking redelivery, back-off schedules and the DLQ.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from support.clientkit import fill, take

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, ReceivedMessage, RedeliveryPolicy, connect
from minibroker.errors import ConsumerClosed

DLQ = "ActiveMQ.DLQ"


def fast_policy(maximum: int = 6, delay: float = 0.25, **kw: object) -> RedeliveryPolicy:
    return RedeliveryPolicy(maximum_redeliveries=maximum, initial_redelivery_delay=delay, redelivery_delay=delay, **kw)  # type: ignore[arg-type]


@pytest.fixture
async def conn(broker: Broker) -> AsyncIterator[Connection]:
    """This module's connection redelivers after 0.25 s (see fast_policy)."""
    async with await connect(broker, redelivery_policy=fast_policy()) as c:
        yield c


def view(msgs: list[ReceivedMessage]) -> list[tuple[str | bytes, bool, int]]:
    return [(m.body, m.redelivered, m.delivery_count) for m in msgs]


def stats(broker: Broker, name: str = "q") -> tuple[int, int, int, int]:
    s = broker.queue(name).statistics()
    return s.size, s.inflight, s.enqueued, s.dequeued


class TestTransactedSends:
    async def test_sends_invisible_until_commit(self, broker: Broker, conn: Connection) -> None:
        """transacted_send_visibility.json: nothing is queued before commit; rollback discards."""
        session = await conn.create_session(AckMode.TRANSACTED)
        producer = await session.create_producer("q")
        consumer = await (await conn.create_session()).create_consumer("q")
        await producer.send("m1")
        await producer.send("m2")
        assert await consumer.receive(timeout=0) is None
        assert stats(broker) == (0, 0, 0, 0)
        await session.commit()
        assert [m.body for m in await take(consumer)] == ["m1", "m2"]
        await producer.send("m3")
        await producer.send("m4")
        await session.rollback()
        assert await consumer.receive(timeout=0) is None
        assert stats(broker) == (0, 0, 2, 2)

    async def test_commit_without_work(self, broker: Broker, conn: Connection) -> None:
        """commit()/rollback() with nothing done are harmless."""
        session = await conn.create_session(AckMode.TRANSACTED)
        await session.commit()
        await session.rollback()
        assert broker.statistics().transactions == 0

    async def test_session_close_discards_open_sends(self, broker: Broker, conn: Connection) -> None:
        """Closing a session rolls back its open transaction: the sends are discarded."""
        session = await conn.create_session(AckMode.TRANSACTED)
        await (await session.create_producer("q")).send("m1")
        await session.close()
        assert broker.queue("q").enqueued == 0
        assert broker.statistics().transactions == 0


class TestTransactedReceives:
    async def test_commit_consumes(self, broker: Broker, conn: Connection) -> None:
        """Received messages stay in flight until commit, then leave the queue."""
        await fill(conn, 2)
        session = await conn.create_session(AckMode.TRANSACTED)
        consumer = await session.create_consumer("q")
        assert len(await take(consumer)) == 2
        assert stats(broker) == (2, 2, 2, 0)
        await session.commit()
        assert stats(broker) == (0, 0, 2, 2)

    async def test_session_close_before_commit(self, broker: Broker, conn: Connection) -> None:
        """close_before_commit.json: m1 received and the session closed: m1 comes back redelivered, m2 not."""
        await fill(conn, 2)
        session = await conn.create_session(AckMode.TRANSACTED)
        consumer = await session.create_consumer("q")
        assert (await consumer.receive(timeout=0)).body == "m1"  # type: ignore[union-attr]
        await session.close()
        assert stats(broker) == (2, 0, 2, 0)
        session2 = await conn.create_session(AckMode.TRANSACTED)
        c2 = await session2.create_consumer("q")
        assert view(await take(c2)) == [("m1", True, 2), ("m2", False, 1)]
        await session2.commit()
        assert stats(broker) == (0, 0, 2, 2)

    async def test_consumer_close_is_deferred_until_commit(self, broker: Broker, conn: Connection) -> None:
        """consumer.close() inside a transaction with deliveries waits for commit, which still acks them."""
        await fill(conn, 2)
        session = await conn.create_session(AckMode.TRANSACTED)
        consumer = await session.create_consumer("q")
        assert (await consumer.receive(timeout=0)).body == "m1"  # type: ignore[union-attr]
        await consumer.close()
        with pytest.raises(ConsumerClosed):
            await consumer.receive(timeout=0)
        assert broker.queue("q").consumers == 1
        await session.commit()
        assert broker.queue("q").consumers == 0
        assert stats(broker) == (1, 0, 2, 1)
        assert [m.body for m in broker.queue("q").browse()] == ["m2"]

    async def test_listener_exception_in_transacted_session(self, broker: Broker, clock: ManualClock) -> None:
        """listener_exception_transacted.json: a throwing listener's messages count as consumed (no local
        redelivery); closing the session gives them back with the broker counter raised."""
        async with await connect(broker, redelivery_policy=fast_policy(maximum=2, delay=0.125)) as conn:
            await fill(conn, 2)
            seen: list[str | bytes] = []

            def listener(msg: ReceivedMessage) -> None:
                seen.append(msg.body)
                raise RuntimeError("boom")

            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            consumer.set_listener(listener)
            await broker.run_ready()
            await clock.advance(2)
            assert seen == ["m1", "m2"]
            assert stats(broker) == (2, 2, 2, 0)
            await session.close()
            assert stats(broker) == (2, 0, 2, 0)
            c2 = await (await conn.create_session(AckMode.CLIENT)).create_consumer("q")
            assert view(await take(c2)) == [("m1", True, 2), ("m2", True, 2)]
            assert not broker.queue(DLQ).exists


class TestRollbackRedelivery:
    async def test_rollback_blocks_the_consumer(self, broker: Broker, clock: ManualClock) -> None:
        """rollback_blocks_consumer.json: during the delay nothing is delivered, not even prefetched m2 or a new
        m3; then the rolled-back m1 first, then m2, m3."""
        async with await connect(broker, redelivery_policy=fast_policy(delay=0.25)) as conn:
            await fill(conn, 2)
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            assert (await consumer.receive(timeout=0)).body == "m1"  # type: ignore[union-attr]
            await session.rollback()
            assert await consumer.receive(timeout=0) is None
            task = asyncio.create_task(consumer.receive(timeout=0.125))
            await clock.advance(0.125)
            assert task.done() and task.result() is None
            await fill(conn, 1)
            assert await consumer.receive(timeout=0) is None
            await clock.advance(0.125)
            assert view(await take(consumer)) == [("m1", True, 2), ("m2", False, 1), ("m1", False, 1)]
            await session.commit()
            assert stats(broker) == (0, 0, 3, 3)

    async def test_rolled_back_messages_come_first_in_order(
        self, broker: Broker, conn: Connection, clock: ManualClock
    ) -> None:
        """Several rolled-back messages are re-inserted at the front in their original order."""
        await fill(conn, 4)
        session = await conn.create_session(AckMode.TRANSACTED)
        consumer = await session.create_consumer("q")
        assert [m.body for m in await take(consumer, 3)] == ["m1", "m2", "m3"]
        await session.rollback()
        await clock.advance(0.25)
        assert view(await take(consumer)) == [("m1", True, 2), ("m2", True, 2), ("m3", True, 2), ("m4", False, 1)]

    async def test_waiting_receive_gets_the_redelivery(self, conn: Connection, clock: ManualClock) -> None:
        """A receive waiting across the delay returns the redelivered message as soon as the delay is over."""
        await fill(conn, 1)
        session = await conn.create_session(AckMode.TRANSACTED)
        consumer = await session.create_consumer("q")
        assert await consumer.receive(timeout=0) is not None
        await session.rollback()
        task = asyncio.create_task(consumer.receive(timeout=10))
        await clock.advance(0.125)
        assert not task.done()
        await clock.advance(0.125)
        assert task.done() and task.result().delivery_count == 2  # type: ignore[union-attr]

    async def test_non_blocking_redelivery_lets_others_overtake(self, broker: Broker, clock: ManualClock) -> None:
        """non_blocking_redelivery=True: other messages flow during the delay; the rolled-back one comes after."""
        async with await connect(
            broker, redelivery_policy=fast_policy(delay=0.25), non_blocking_redelivery=True
        ) as conn:
            await fill(conn, 2)
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            assert (await consumer.receive(timeout=0)).body == "m1"  # type: ignore[union-attr]
            await session.rollback()
            assert view(await take(consumer)) == [("m2", False, 1)]
            await clock.advance(0.25)
            assert view(await take(consumer)) == [("m1", True, 2)]

    async def test_commit_after_non_blocking_redelivery(self, broker: Broker, clock: ManualClock) -> None:
        """Messages received in one transaction, the redelivered one after the others, are all consumed by commit."""
        async with await connect(
            broker, redelivery_policy=fast_policy(delay=0.25), non_blocking_redelivery=True
        ) as conn:
            await fill(conn, 2)
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            assert await consumer.receive(timeout=0) is not None
            await session.rollback()
            assert len(await take(consumer)) == 1
            await clock.advance(0.25)
            assert len(await take(consumer)) == 1
            await session.commit()
            assert conn.async_errors == []
            assert stats(broker) == (0, 0, 2, 2)

    async def test_to_dlq_after_maximum_redeliveries(self, broker: Broker, clock: ManualClock) -> None:
        """transacted_rollback_to_dlq.json: max 2 → 3 deliveries, then ActiveMQ.DLQ with ActiveMQ's cause text."""
        policy = fast_policy(maximum=2, delay=0.125)
        async with await connect(broker, redelivery_policy=policy) as conn:
            [mid] = await fill(conn, 1)
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            counts = []
            for _ in range(3):
                msg = await consumer.receive(timeout=0)
                assert msg is not None
                counts.append(msg.delivery_count)
                await session.rollback()
                await clock.advance(0.125)
            assert counts == [1, 2, 3]
            assert await consumer.receive(timeout=0) is None
            assert stats(broker) == (0, 0, 1, 1)
            assert stats(broker, DLQ)[:3] == (1, 0, 1)
            dlq = await (await conn.create_session()).create_consumer(DLQ)
            dead = await dlq.receive(timeout=0)
            assert dead is not None and dead.message_id == mid
            assert dead.get_property("dlqDeliveryFailureCause") == (
                f"java.lang.Throwable: Delivery[3] exceeds redelivery policy limit:{policy.activemq_string()}, "
                "cause:null"
            )
            assert (
                "Delivery[3] exceeds redelivery policy limit:RedeliveryPolicy {destination = null, "
                "collisionAvoidanceFactor = 0.15, maximumRedeliveries = 2,"
                in dead.get_property(  # type: ignore
                    "dlqDeliveryFailureCause"
                )
            )
            assert (dead.redelivered, dead.persistent, str(dead.original_destination)) == (False, True, "queue://q")

    async def test_two_messages_rolled_back_together(self, broker: Broker, clock: ManualClock) -> None:
        """transacted_rollback_two_messages.json: m1,m2 redelivered together, then dead-lettered in order."""
        async with await connect(broker, redelivery_policy=fast_policy(maximum=1, delay=0.125)) as conn:
            await fill(conn, 3)
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            assert view(await take(consumer, 2)) == [("m1", False, 1), ("m2", False, 1)]
            await session.rollback()
            await clock.advance(0.125)
            assert view(await take(consumer, 2)) == [("m1", True, 2), ("m2", True, 2)]
            await session.rollback()
            assert view(await take(consumer)) == [("m3", False, 1)]
            await session.rollback()
            await clock.advance(0.125)
            assert view(await take(consumer)) == [("m3", True, 2)]
            await session.commit()
            assert stats(broker) == (0, 0, 3, 3)
            assert [m.body for m in broker.queue(DLQ).browse()] == ["m1", "m2"]
            assert all(
                "Delivery[2] exceeds" in str(m.properties["dlqDeliveryFailureCause"])
                for m in broker.queue(DLQ).browse()
            )

    async def test_maximum_redeliveries_zero(self, broker: Broker) -> None:
        """maximum_redeliveries=0: the first rollback dead-letters (maximum_redeliveries_zero.json)."""
        async with await connect(broker, redelivery_policy=fast_policy(maximum=0)) as conn:
            await fill(conn, 1)
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            assert await consumer.receive(timeout=0) is not None
            await session.rollback()
            assert [m.body for m in broker.queue(DLQ).browse()] == ["m1"]

    async def test_non_persistent_poison_is_dropped(self, broker: Broker, clock: ManualClock) -> None:
        """non_persistent_to_dlq.json: a non-persistent message past the maximum is dropped, no DLQ."""
        async with await connect(broker, redelivery_policy=fast_policy(maximum=1, delay=0.125)) as conn:
            await fill(conn, 1, persistent=False)
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            for _ in range(2):
                assert await consumer.receive(timeout=0) is not None
                await session.rollback()
                await clock.advance(0.125)
            assert await consumer.receive(timeout=0) is None
            assert stats(broker) == (0, 0, 1, 1)
            assert not broker.queue(DLQ).exists

    async def test_unlimited_redeliveries(self, broker: Broker, clock: ManualClock) -> None:
        """maximum_redeliveries=-1 never gives up."""
        async with await connect(broker, redelivery_policy=fast_policy(maximum=-1, delay=0.125)) as conn:
            await fill(conn, 1)
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            for k in range(1, 21):
                msg = await consumer.receive(timeout=0)
                assert msg is not None and msg.delivery_count == k
                await session.rollback()
                await clock.advance(0.125)
            assert not broker.queue(DLQ).exists

    async def test_topic_poison_is_dropped(self, broker: Broker) -> None:
        """On a non-durable topic subscription a poison ack only counts: nothing reaches the DLQ (§2 POISON)."""
        async with await connect(broker, redelivery_policy=fast_policy(maximum=0)) as conn:
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("topic://t")
            producer = await (await conn.create_session()).create_producer("topic://t")
            await producer.send("t1")
            assert await consumer.receive(timeout=0) is not None
            await session.rollback()
            assert not broker.queue(DLQ).exists
            assert broker.core.topics["t"].dequeued == 1

    async def test_pre_dispatch_check_in_transacted_session(self, broker: Broker) -> None:
        """A message arriving with a broker counter past the maximum is poisoned before reaching a transacted
        session's application (§4 pre-dispatch check)."""
        async with await connect(broker, redelivery_policy=fast_policy(maximum=1)) as conn:
            await fill(conn, 1)
            for _ in range(2):
                session = await conn.create_session(AckMode.CLIENT)
                consumer = await session.create_consumer("q")
                assert await consumer.receive(timeout=0) is not None
                await session.close()
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            assert await consumer.receive(timeout=0) is None
            [dead] = broker.queue(DLQ).browse()
            assert "exceeds redelivery policy limit" in str(dead.properties["dlqDeliveryFailureCause"])
            assert stats(broker)[0] == 0


class TestBackOff:
    @pytest.mark.parametrize(
        "policy",
        [
            RedeliveryPolicy(
                maximum_redeliveries=4,
                initial_redelivery_delay=0.1,
                use_exponential_backoff=True,
                backoff_multiplier=2.0,
            ),
            RedeliveryPolicy(
                maximum_redeliveries=4,
                initial_redelivery_delay=0.1,
                redelivery_delay=0.1,
                use_exponential_backoff=True,
                backoff_multiplier=2.0,
                maximum_redelivery_delay=0.25,
            ),
            RedeliveryPolicy(
                maximum_redeliveries=4, initial_redelivery_delay=0.0, redelivery_delay=1.0, use_exponential_backoff=True
            ),
            RedeliveryPolicy(maximum_redeliveries=4),
        ],
        ids=["exponential", "capped", "zero-initial", "default"],
    )
    async def test_schedule_equals_delay_for(
        self, broker: Broker, clock: ManualClock, policy: RedeliveryPolicy
    ) -> None:
        """The k-th redelivery comes exactly policy.delay_for(k) after the k-th rollback (within 1 ms), then DLQ."""
        async with await connect(broker, redelivery_policy=policy) as conn:
            await fill(conn, 1)
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            assert await consumer.receive(timeout=0) is not None
            observed = []
            for k in range(1, 5):
                await session.rollback()
                delay = policy.delay_for(k)
                if delay >= 0.001:
                    await clock.advance(delay - 0.001)
                    assert await consumer.receive(timeout=0) is None, f"redelivery {k} came early"
                    await clock.advance(0.002)
                msg = await consumer.receive(timeout=0)
                assert msg is not None, f"redelivery {k} not there after {delay} s"
                assert msg.delivery_count == k + 1
                observed.append(delay)
            await session.rollback()
            await clock.advance(100)
            assert await consumer.receive(timeout=0) is None
            assert broker.queue(DLQ).size == 1
            assert observed == [policy.delay_for(k) for k in range(1, 5)]

    async def test_collision_avoidance_replays_from_the_connection_seed(
        self, broker: Broker, clock: ManualClock
    ) -> None:
        """With collision avoidance each delay is delay_for(k, rng) drawn from random.Random(seed) of connect()."""
        import random

        policy = RedeliveryPolicy(
            maximum_redeliveries=-1,
            initial_redelivery_delay=1.0,
            redelivery_delay=1.0,
            use_collision_avoidance=True,
            collision_avoidance_factor=0.5,
        )
        rng = random.Random(7)
        expected = [policy.delay_for(k, rng) for k in range(1, 6)]
        assert len(set(expected)) > 1
        async with await connect(broker, redelivery_policy=policy, seed=7) as conn:
            await fill(conn, 1)
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            assert await consumer.receive(timeout=0) is not None
            for k, delay in enumerate(expected, 1):
                await session.rollback()
                await clock.advance(delay - 0.001)
                assert await consumer.receive(timeout=0) is None, f"redelivery {k} came before {delay}"
                await clock.advance(0.002)
                assert await consumer.receive(timeout=0) is not None, f"redelivery {k} missing after {delay}"

    async def test_measured_exponential_schedule(self) -> None:
        """exponential_backoff.json measured gaps of 100, 200, 400, 800 ms."""
        policy = RedeliveryPolicy(
            maximum_redeliveries=4, initial_redelivery_delay=0.1, use_exponential_backoff=True, backoff_multiplier=2.0
        )
        assert [policy.delay_for(k) for k in range(1, 5)] == [0.1, 0.2, 0.4, 0.8]
