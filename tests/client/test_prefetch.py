"""Prefetch windows seen from the client (semantics §3): distribution between consumers, DELIVERED acks widening the
window of CLIENT and transacted consumers, expiry in the client's buffer."""

from __future__ import annotations

from support.clientkit import fill, take

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, PrefetchPolicy, connect


class TestDistribution:
    async def test_small_prefetch_created_first(self, broker: Broker, conn: Connection) -> None:
        """prefetch_distribution.json: A (prefetch 1) gets m1, B (1000) the nine others, all in flight at once."""
        session = await conn.create_session()
        a = await session.create_consumer("q", prefetch=1)
        b = await session.create_consumer("q", prefetch=1000)
        await fill(conn, 10)
        assert (broker.queue("q").size, broker.queue("q").inflight) == (10, 10)
        assert [m.body for m in await take(a, 1)] == ["m1"]
        assert [m.body for m in await take(b)] == [f"m{i}" for i in range(2, 11)]

    async def test_equal_consumers_alternate(self, broker: Broker, conn: Connection) -> None:
        """prefetch_distribution_equal.json: two default consumers present before the sends alternate."""
        session = await conn.create_session()
        a = await session.create_consumer("q")
        b = await session.create_consumer("q")
        await fill(conn, 10)
        assert [m.body for m in await take(a)] == ["m1", "m3", "m5", "m7", "m9"]
        assert [m.body for m in await take(b)] == ["m2", "m4", "m6", "m8", "m10"]
        assert broker.queue("q").size == 0

    async def test_backlog_goes_to_the_first_consumer(self, broker: Broker, conn: Connection) -> None:
        """The first consumer to attach takes up to its prefetch of a backlog."""
        await fill(conn, 10)
        session = await conn.create_session()
        a = await session.create_consumer("q", prefetch=3)
        b = await session.create_consumer("q", prefetch=100)
        assert [m.body for m in await take(b)] == [f"m{i}" for i in range(4, 11)]
        assert [m.body for m in await take(a)] == ["m1", "m2", "m3"]

    async def test_connection_prefetch_setting(self, broker: Broker) -> None:
        """connect(prefetch=N) sets every consumer's default prefetch (jms.prefetchPolicy.all)."""
        async with await connect(broker, prefetch=2) as conn:
            await fill(conn, 5)
            consumer = await (await conn.create_session(AckMode.CLIENT)).create_consumer("q")
            assert consumer.prefetch == 2
            assert broker.queue("q").inflight == 2
        async with await connect(broker, prefetch=PrefetchPolicy(queue=7)) as conn:
            consumer = await (await conn.create_session()).create_consumer("q")
            assert consumer.prefetch == 7

    async def test_auto_prefetch_one_holds_one_at_a_time(self, broker: Broker, conn: Connection) -> None:
        """AUTO with prefetch 1: exactly one message is in flight until it is received (and acked)."""
        await fill(conn, 3)
        consumer = await (await conn.create_session()).create_consumer("q", prefetch=1)
        for left in (3, 2, 1):
            assert (broker.queue("q").size, broker.queue("q").inflight) == (left, 1)
            assert await consumer.receive(timeout=0) is not None
        assert (broker.queue("q").size, broker.queue("q").inflight) == (0, 0)


class TestDeliveredAcksWidenTheWindow:
    async def test_client_consumer_that_never_acks_keeps_receiving(self, broker: Broker, conn: Connection) -> None:
        """CLIENT, prefetch 2, no acknowledge: DELIVERED acks keep widening the window, so all 10 arrive (§2)."""
        await fill(conn, 10)
        consumer = await (await conn.create_session(AckMode.CLIENT)).create_consumer("q", prefetch=2)
        assert len(await take(consumer)) == 10
        assert (broker.queue("q").size, broker.queue("q").inflight, broker.queue("q").dequeued) == (10, 10, 0)

    async def test_transacted_consumer_gets_more_than_prefetch_in_one_transaction(
        self, broker: Broker, conn: Connection
    ) -> None:
        """A transacted consumer with prefetch 1 receives 5 messages in one transaction; commit consumes all."""
        await fill(conn, 5)
        session = await conn.create_session(AckMode.TRANSACTED)
        consumer = await session.create_consumer("q", prefetch=1)
        assert len(await take(consumer)) == 5
        await session.commit()
        assert (broker.queue("q").size, broker.queue("q").dequeued) == (0, 5)
        assert conn.async_errors == []

    async def test_window_history_shows_delivered_acks(self, broker: Broker, conn: Connection) -> None:
        """With prefetch 1 a DELIVERED ack follows every delivered CLIENT message (0.5 x prefetch rule)."""
        ids = await fill(conn, 2)
        consumer = await (await conn.create_session(AckMode.CLIENT)).create_consumer("q", prefetch=1)
        await take(consumer)
        for mid in ids:
            assert [r.ack_type for r in broker.history(mid) if r.event == "ack"] == ["DELIVERED"]


class TestExpiryInTheClient:
    async def test_expired_in_buffer_is_not_delivered(
        self, broker: Broker, conn: Connection, clock: ManualClock
    ) -> None:
        """A prefetched message that expires before receive() is dropped with an EXPIRED ack, then the DLQ
        (expired_message.json)."""
        consumer = await (await conn.create_session()).create_consumer("q")
        [old] = await fill(conn, 1, ttl=0.125)
        await fill(conn, 1)
        await clock.advance(0.25)
        assert [m.body for m in await take(consumer)] == ["m1"]
        s = broker.queue("q").statistics()
        assert (s.size, s.inflight, s.enqueued, s.dequeued, s.expired) == (0, 0, 2, 2, 1)
        [dead] = broker.queue("ActiveMQ.DLQ").browse()
        assert dead.message_id == old and dead.expiration == 0
        assert str(dead.properties["dlqDeliveryFailureCause"]).startswith(
            "java.lang.Throwable: Message Expired. Expiration:"
        )
        assert [r.ack_type for r in broker.history(old) if r.event == "ack"] == ["EXPIRED"]

    async def test_expired_before_dispatch(self, broker: Broker, conn: Connection, clock: ManualClock) -> None:
        """A message that expired while queued is never dispatched; a non-persistent one is not dead-lettered."""
        await fill(conn, 1, ttl=0.125, persistent=False)
        await clock.advance(0.25)
        consumer = await (await conn.create_session()).create_consumer("q")
        assert await consumer.receive(timeout=0) is None
        assert (broker.queue("q").size, broker.queue("q").expired) == (0, 1)
        assert not broker.queue("ActiveMQ.DLQ").exists
