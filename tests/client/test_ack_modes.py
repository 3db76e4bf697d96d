"""The five acknowledge modes through the public client API, and the misuse each one refuses (semantics §1).

Time is virtual: a ManualClock moves only when a test advances it.
"""

from __future__ import annotations

import pytest
from support.clientkit import fill

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, ReceivedMessage, RedeliveryPolicy, connect
from minibroker.errors import ConsumerClosed, IllegalStateError, InvalidConfiguration


def sizes(broker: Broker, name: str = "q") -> tuple[int, int, int]:
    s = broker.queue(name).statistics()
    return s.size, s.inflight, s.dequeued


class TestAuto:
    async def test_receive_acks_before_returning(self, broker: Broker, conn: Connection) -> None:
        """AUTO: the STANDARD ack is sent inside receive(): the queue shrinks as each receive returns."""
        await fill(conn, 3)
        consumer = await (await conn.create_session(AckMode.AUTO)).create_consumer("q")
        assert sizes(broker) == (3, 3, 0)
        for expected in (2, 1, 0):
            msg = await consumer.receive(timeout=0)
            assert msg is not None
            assert broker.queue("q").size == expected
        assert sizes(broker) == (0, 0, 3)

    async def test_acknowledge_is_a_no_op(self, broker: Broker, conn: Connection) -> None:
        """message.acknowledge() does nothing in AUTO mode (already acked) and raises nothing."""
        await fill(conn, 1)
        consumer = await (await conn.create_session(AckMode.AUTO)).create_consumer("q")
        msg = await consumer.receive(timeout=0)
        assert msg is not None
        await msg.acknowledge()
        assert sizes(broker) == (0, 0, 1)

    async def test_listener_acks_after_it_returns(self, broker: Broker, conn: Connection) -> None:
        """AUTO listener: the message is still in flight while the listener runs, acked once it returns."""
        await fill(conn, 2)
        seen: list[tuple[str, int]] = []

        def listener(msg: object) -> None:
            seen.append((msg.body, broker.queue("q").size))  # type: ignore[attr-defined]

        consumer = await (await conn.create_session(AckMode.AUTO)).create_consumer("q")
        consumer.set_listener(listener)
        await broker.run_ready()
        assert seen == [("m1", 2), ("m2", 1)]
        assert sizes(broker) == (0, 0, 2)


class TestDupsOk:
    async def test_dups_ok_on_a_queue_acks_like_auto(self, broker: Broker, conn: Connection) -> None:
        """DUPS_OK on a queue is "ack-each": every receive acks at once (dups_ok.json)."""
        await fill(conn, 6)
        consumer = await (await conn.create_session(AckMode.DUPS_OK)).create_consumer("q")
        for _ in range(3):
            assert await consumer.receive(timeout=0) is not None
        assert sizes(broker) == (3, 3, 3)
        for _ in range(3):
            assert await consumer.receive(timeout=0) is not None
        assert sizes(broker) == (0, 0, 6)
        await consumer.close()
        assert sizes(broker) == (0, 0, 6)

    async def test_dups_ok_on_a_topic_acks_in_batches(self, broker: Broker, conn: Connection) -> None:
        """DUPS_OK on a topic is "ack-batch": a STANDARD range ack once 0.5 x prefetch were consumed."""
        session = await conn.create_session(AckMode.DUPS_OK)
        consumer = await session.create_consumer("topic://t", prefetch=4)
        producer = await session.create_producer("topic://t")
        for i in range(4):
            await producer.send(f"t{i}")
        topic = broker.core.topics["t"]
        assert await consumer.receive(timeout=0) is not None
        assert topic.dequeued == 0
        assert await consumer.receive(timeout=0) is not None
        assert topic.dequeued == 2

    async def test_dups_ok_on_a_topic_flushes_pending_acks_on_close(self, broker: Broker, conn: Connection) -> None:
        """DUPS_OK topic: acks still pending below the 0.5 x prefetch threshold are sent when the consumer closes."""
        session = await conn.create_session(AckMode.DUPS_OK)
        consumer = await session.create_consumer("topic://t", prefetch=10)
        producer = await session.create_producer("topic://t")
        ids = [await producer.send(f"t{i}") for i in range(3)]
        for _ in range(3):
            assert await consumer.receive(timeout=0) is not None
        assert broker.core.topics["t"].dequeued == 0
        await consumer.close()
        assert broker.core.topics["t"].dequeued == 3
        assert all([r.ack_type for r in broker.history(mid) if r.event == "ack"] == ["STANDARD"] for mid in ids)

    async def test_dups_ok_topic_listener_exception_is_not_redelivered(
        self, broker: Broker, conn: Connection, clock: ManualClock
    ) -> None:
        """DUPS_OK topic tracks nothing: a listener that raises does not get the message again (§1)."""
        seen: list[str | bytes] = []

        def listener(msg: ReceivedMessage) -> None:
            seen.append(msg.body)
            raise RuntimeError("boom")

        session = await conn.create_session(AckMode.DUPS_OK)
        consumer = await session.create_consumer("topic://t", prefetch=10)
        consumer.set_listener(listener)
        producer = await (await conn.create_session()).create_producer("topic://t")
        await producer.send("t1")
        await broker.run_ready()
        await clock.advance(10)
        assert seen == ["t1"]


class TestClientAcknowledge:
    async def test_acknowledge_acks_the_whole_session(self, broker: Broker, conn: Connection) -> None:
        """CLIENT: acknowledge() on one message acks everything delivered by every consumer of the session."""
        await fill(conn, 2, "a")
        await fill(conn, 2, "b")
        session = await conn.create_session(AckMode.CLIENT)
        ca = await session.create_consumer("a")
        cb = await session.create_consumer("b")
        a1 = await ca.receive(timeout=0)
        b1 = await cb.receive(timeout=0)
        assert a1 is not None and b1 is not None
        assert sizes(broker, "a") == (2, 2, 0) and sizes(broker, "b") == (2, 2, 0)
        await a1.acknowledge()
        assert sizes(broker, "a") == (1, 1, 1)
        assert sizes(broker, "b") == (1, 1, 1)

    async def test_acknowledge_covers_earlier_messages(self, broker: Broker, conn: Connection) -> None:
        """Acknowledging an earlier message still acks everything delivered so far (client_ack_recover.json)."""
        await fill(conn, 3)
        consumer = await (await conn.create_session(AckMode.CLIENT)).create_consumer("q")
        msgs = [await consumer.receive(timeout=0) for _ in range(3)]
        assert all(msgs)
        await msgs[0].acknowledge()  # type: ignore[union-attr]
        assert sizes(broker) == (0, 0, 3)

    async def test_session_acknowledge(self, broker: Broker, conn: Connection) -> None:
        """session.acknowledge() is the same as message.acknowledge() in CLIENT mode."""
        await fill(conn, 2)
        session = await conn.create_session(AckMode.CLIENT)
        consumer = await session.create_consumer("q")
        assert await consumer.receive(timeout=0) is not None
        await session.acknowledge()
        assert sizes(broker) == (1, 1, 1)

    async def test_unacked_messages_are_not_consumed(self, broker: Broker, conn: Connection) -> None:
        """Without acknowledge() nothing leaves the queue."""
        await fill(conn, 3)
        consumer = await (await conn.create_session(AckMode.CLIENT)).create_consumer("q")
        for _ in range(3):
            assert await consumer.receive(timeout=0) is not None
        assert sizes(broker) == (3, 3, 0)


class TestIndividualAcknowledge:
    async def test_acknowledge_acks_one_message(self, broker: Broker, conn: Connection) -> None:
        """INDIVIDUAL: acknowledge() acks that message only (individual_ack.json)."""
        await fill(conn, 3)
        consumer = await (await conn.create_session(AckMode.INDIVIDUAL)).create_consumer("q")
        _, m2, _ = [await consumer.receive(timeout=0) for _ in range(3)]
        assert m2 is not None
        await m2.acknowledge()
        assert sizes(broker) == (2, 2, 1)
        assert [m.body for m in broker.queue("q").browse()] == ["m1", "m3"]

    async def test_close_gives_back_the_rest(self, broker: Broker, conn: Connection) -> None:
        """After closing, m1 and m3 come back redelivered (last delivered m3 was not acked)."""
        await fill(conn, 3)
        consumer = await (await conn.create_session(AckMode.INDIVIDUAL)).create_consumer("q")
        msgs = [await consumer.receive(timeout=0) for _ in range(3)]
        await msgs[1].acknowledge()  # type: ignore[union-attr]
        await consumer.close()
        again = await (await conn.create_session(AckMode.INDIVIDUAL)).create_consumer("q")
        got = [await again.receive(timeout=0) for _ in range(3)]
        assert [(m.body, m.redelivered, m.delivery_count) for m in got if m] == [("m1", True, 2), ("m3", True, 2)]
        assert got[2] is None

    async def test_recover_redelivers_only_the_unacked(
        self, broker: Broker, conn: Connection, clock: ManualClock
    ) -> None:
        """INDIVIDUAL + recover(): m2 was acked, so only m1 and m3 come back (redelivered)."""
        await fill(conn, 3)
        session = await conn.create_session(AckMode.INDIVIDUAL)
        consumer = await session.create_consumer("q")
        msgs = [await consumer.receive(timeout=0) for _ in range(3)]
        await msgs[1].acknowledge()  # type: ignore[union-attr]
        await session.recover()
        await clock.advance(1)
        got = [await consumer.receive(timeout=0) for _ in range(3)]
        assert [(m.body, m.delivery_count) for m in got if m] == [("m1", 2), ("m3", 2)]

    async def test_listener_exception_rolls_back_all_unacked(
        self, broker: Broker, conn: Connection, clock: ManualClock
    ) -> None:
        """INDIVIDUAL listener that raises: rollback() redelivers every unacked message, not only the failing one."""
        await fill(conn, 2)
        seen: list[tuple[str | bytes, int]] = []

        def listener(msg: ReceivedMessage) -> None:
            seen.append((msg.body, msg.delivery_count))
            if msg.body == "m2" and msg.delivery_count == 1:
                raise RuntimeError("once")

        consumer = await (await conn.create_session(AckMode.INDIVIDUAL)).create_consumer("q")
        consumer.set_listener(listener)
        await broker.run_ready()
        assert seen == [("m1", 1), ("m2", 1)]
        await clock.advance(1)
        assert seen == [("m1", 1), ("m2", 1), ("m1", 2), ("m2", 2)]
        assert sizes(broker) == (2, 2, 0)


class TestRecover:
    async def test_recover_redelivers_after_default_delay(
        self, broker: Broker, conn: Connection, clock: ManualClock
    ) -> None:
        """recover(): after the 1 s default delay, everything unacked comes back with redelivered/delivery_count."""
        await fill(conn, 3)
        session = await conn.create_session(AckMode.CLIENT)
        consumer = await session.create_consumer("q")
        for _ in range(3):
            assert await consumer.receive(timeout=0) is not None
        await session.recover()
        assert await consumer.receive(timeout=0) is None
        await clock.advance(0.875)
        assert await consumer.receive(timeout=0) is None
        await clock.advance(0.125)
        got = [await consumer.receive(timeout=0) for _ in range(3)]
        assert [(m.body, m.redelivered, m.delivery_count) for m in got if m] == [
            ("m1", True, 2),
            ("m2", True, 2),
            ("m3", True, 2),
        ]
        await session.recover()
        await clock.advance(1.0)
        got = [await consumer.receive(timeout=0) for _ in range(3)]
        assert [m.delivery_count for m in got if m] == [3, 3, 3]
        await got[1].acknowledge()  # type: ignore[union-attr]
        assert sizes(broker) == (0, 0, 3)

    async def test_recover_in_auto_mode_has_nothing_to_redeliver(
        self, broker: Broker, conn: Connection, clock: ManualClock
    ) -> None:
        """AUTO has acked everything already: recover() redelivers nothing."""
        await fill(conn, 1)
        session = await conn.create_session(AckMode.AUTO)
        consumer = await session.create_consumer("q")
        assert await consumer.receive(timeout=0) is not None
        await session.recover()
        await clock.advance(5)
        assert await consumer.receive(timeout=0) is None
        assert sizes(broker) == (0, 0, 1)

    async def test_recover_to_dlq_when_exhausted(self, broker: Broker, clock: ManualClock) -> None:
        """recover() counts as a redelivery: past maximum_redeliveries the messages are poisoned to the DLQ."""
        policy = RedeliveryPolicy(maximum_redeliveries=1, initial_redelivery_delay=0.1, redelivery_delay=0.1)
        async with await connect(broker, redelivery_policy=policy) as conn:
            await fill(conn, 1)
            session = await conn.create_session(AckMode.CLIENT)
            consumer = await session.create_consumer("q")
            assert await consumer.receive(timeout=0) is not None
            await session.recover()
            await clock.advance(0.1)
            assert (await consumer.receive(timeout=0)).delivery_count == 2  # type: ignore[union-attr]
            await session.recover()
            await clock.advance(10)
            assert await consumer.receive(timeout=0) is None
            assert [m.body for m in broker.queue("ActiveMQ.DLQ").browse()] == ["m1"]
            assert sizes(broker) == (0, 0, 1)


class TestMisuse:
    async def test_recover_on_transacted_session(self, conn: Connection) -> None:
        """recover() on a transacted session → IllegalStateError "This session is transacted"."""
        session = await conn.create_session(AckMode.TRANSACTED)
        with pytest.raises(IllegalStateError, match="This session is transacted"):
            await session.recover()

    @pytest.mark.parametrize("mode", [AckMode.AUTO, AckMode.CLIENT, AckMode.DUPS_OK, AckMode.INDIVIDUAL])
    async def test_commit_and_rollback_on_non_transacted_session(self, conn: Connection, mode: AckMode) -> None:
        """commit()/rollback() outside a transacted session → IllegalStateError "Not a transacted session"."""
        session = await conn.create_session(mode)
        with pytest.raises(IllegalStateError, match="Not a transacted session"):
            await session.commit()
        with pytest.raises(IllegalStateError, match="Not a transacted session"):
            await session.rollback()

    @pytest.mark.parametrize("mode", [AckMode.CLIENT, AckMode.INDIVIDUAL])
    async def test_acknowledge_after_consumer_close(self, broker: Broker, conn: Connection, mode: AckMode) -> None:
        """acknowledge() once its consumer is closed → ConsumerClosed ("The Consumer is closed"); nothing acked."""
        await fill(conn, 1)
        consumer = await (await conn.create_session(mode)).create_consumer("q")
        msg = await consumer.receive(timeout=0)
        assert msg is not None
        await consumer.close()
        with pytest.raises(ConsumerClosed, match="The Consumer is closed"):
            await msg.acknowledge()
        assert issubclass(ConsumerClosed, IllegalStateError)
        assert sizes(broker) == (1, 0, 0)

    async def test_receive_with_a_listener_set(self, conn: Connection) -> None:
        """Synchronous receive on a session where a consumer has a listener → IllegalStateError."""
        session = await conn.create_session(AckMode.AUTO)
        with_listener = await session.create_consumer("q")
        other = await session.create_consumer("r")
        with_listener.set_listener(lambda m: None)
        for consumer in (with_listener, other):
            with pytest.raises(
                IllegalStateError, match="Cannot synchronously receive a message when a MessageListener is set"
            ):
                await consumer.receive(timeout=0)

    async def test_listener_with_prefetch_zero(self, conn: Connection) -> None:
        """set_listener on a prefetch-0 consumer → InvalidConfiguration with ActiveMQ's text (prefetch_zero_pull)."""
        consumer = await (await conn.create_session(AckMode.AUTO)).create_consumer("q", prefetch=0)
        with pytest.raises(InvalidConfiguration) as info:
            consumer.set_listener(lambda m: None)
        assert str(info.value) == (
            "Illegal prefetch size of zero. This setting is not supported for asynchronous "
            "consumers please set a value of at least 1"
        )
        assert consumer.listener is None

    @pytest.mark.parametrize("mode", [-1, 5, 99])
    async def test_invalid_ack_mode(self, conn: Connection, mode: int) -> None:
        """A mode outside 0..4 is refused."""
        with pytest.raises(InvalidConfiguration):
            await conn.create_session(mode)

    async def test_ack_mode_values(self) -> None:
        """AckMode carries the JMS constants."""
        assert [
            int(m)
            for m in (
                AckMode.SESSION_TRANSACTED,
                AckMode.AUTO_ACKNOWLEDGE,
                AckMode.CLIENT_ACKNOWLEDGE,
                AckMode.DUPS_OK_ACKNOWLEDGE,
                AckMode.INDIVIDUAL_ACKNOWLEDGE,
            )
        ] == [0, 1, 2, 3, 4]
