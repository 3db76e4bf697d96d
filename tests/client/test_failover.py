"""Fault-tolerant connections: a dropped transport, a reconnect, and ActiveMQ's duplicate suppression (§7)."""

from __future__ import annotations

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, connect
from minibroker.errors import TransactionRolledBack

CAUSE = "Suppressing duplicate delivery on connection, consumer"


async def _send(broker: Broker, *bodies: str, queue: str = "Q") -> None:
    async with await connect(broker) as conn:
        session = await conn.create_session()
        producer = await session.create_producer(queue)
        for body in bodies:
            await producer.send(body)


class TestDuplicateSuppression:
    async def test_delivered_unacked_messages_are_poisoned_after_failover(self) -> None:
        """CLIENT mode, m1 and m2 received unacked, transport dropped: after the reconnect the broker dispatches
        them again, the client recognises them as duplicates and poison-acks them into the DLQ; m3, only
        prefetched before the drop, is delivered normally."""
        clock = ManualClock()
        async with Broker(clock=clock) as broker:
            await _send(broker, "m1", "m2", "m3")
            conn = await connect(broker, fault_tolerant=True)
            session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
            consumer = await session.create_consumer("Q")
            first = await consumer.receive(0)
            second = await consumer.receive(0)
            assert first is not None and second is not None
            assert broker.drop_connections() == 1  # only ours: the producer connection is closed
            await conn.wait_reconnected()
            await broker.run_ready()
            third = await consumer.receive(0)
            assert third is not None and third.body == "m3"
            assert third.redelivered  # the broker did not know it had not been delivered: +1 for all
            assert await consumer.receive(0) is None
            dlq = broker.queue("ActiveMQ.DLQ").browse()
            assert [m.body for m in dlq] == ["m1", "m2"]
            assert all(CAUSE in str(m.properties["dlqDeliveryFailureCause"]) for m in dlq)
            assert conn.reconnects == 1
            await conn.close()

    async def test_plain_connections_do_not_suppress(self) -> None:
        """Without fault tolerance (tcp:// or vm:// in ActiveMQ) nothing is ever suppressed."""
        clock = ManualClock()
        async with Broker(clock=clock) as broker:
            await _send(broker, "m1")
            conn = await connect(broker)
            session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
            consumer = await session.create_consumer("Q")
            assert (await consumer.receive(0)) is not None
            await session.recover()
            await clock.advance(1.0)
            again = await consumer.receive(0)
            assert again is not None and again.redelivered
            assert not broker.queue("ActiveMQ.DLQ").exists
            await conn.close()


class TestTransactionAcrossFailover:
    async def test_commit_after_failover_rolls_back(self) -> None:
        """A transaction open when the transport failed cannot commit: ActiveMQ throws
        TransactionRolledBackException; the message is redelivered and a later commit consumes it once."""
        clock = ManualClock()
        async with Broker(clock=clock) as broker:
            await _send(broker, "m1")
            conn = await connect(broker, fault_tolerant=True)
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            consumer = await session.create_consumer("Q")
            first = await consumer.receive(0)
            assert first is not None
            broker.drop_connections()
            await conn.wait_reconnected()
            await broker.run_ready()
            try:
                await session.commit()
            except TransactionRolledBack:
                pass
            else:
                raise AssertionError("commit after failover must fail")
            await clock.advance(1.0)
            again = await consumer.receive(0)
            assert again is not None and again.body == "m1" and again.redelivered
            await session.commit()
            assert broker.queue("Q").size == 0
            assert not broker.queue("ActiveMQ.DLQ").exists
            await conn.close()
