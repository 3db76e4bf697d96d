"""The broker's delivery history of a message: each attempt with its delay, ack type and transaction outcome."""

from __future__ import annotations

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, RedeliveryPolicy, connect


class TestDeliveryHistory:
    async def test_rollbacks_then_dead_letter(self) -> None:
        """Two rollbacks with exponential back-off, then the poison ack: the history lists every dispatch and
        ack, the REDELIVERED acks carry the policy's delays, and the transaction outcomes follow each ack."""
        clock = ManualClock()
        policy = RedeliveryPolicy(
            maximum_redeliveries=2,
            initial_redelivery_delay=0.1,
            redelivery_delay=0.1,
            use_exponential_backoff=True,
            backoff_multiplier=2.0,
        )
        async with Broker(clock=clock) as broker, await connect(broker, redelivery_policy=policy) as conn:
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            producer = await session.create_producer("Q")
            message_id = await producer.send("m1")
            await session.commit()
            consumer = await session.create_consumer("Q")
            for _ in range(3):
                msg = await consumer.receive(timeout=5.0) if clock.next_deadline() is None else None
                if msg is None:
                    await clock.advance_to_next_deadline()
                    msg = await consumer.receive(timeout=0)
                assert msg is not None
                await session.rollback()
            history = broker.history(message_id)
            events = [(r.event, r.ack_type) for r in history]
            # one dispatch: the redeliveries after a rollback are the client's own (the broker only hears of them
            # through REDELIVERED acks); with prefetch 1000 no DELIVERED ack is due for a single message
            assert events == [
                ("sent", None),
                ("committed", None),
                ("dispatched", None),
                ("ack", "STANDARD"),
                ("rolled-back", None),
                ("ack", "REDELIVERED"),
                ("ack", "STANDARD"),
                ("rolled-back", None),
                ("ack", "REDELIVERED"),
                ("ack", "STANDARD"),
                ("rolled-back", None),
                ("ack", "POISON"),
                ("dead-lettered", None),
            ]
            delays = [r.delay for r in history if r.ack_type == "REDELIVERED"]
            assert delays == [policy.delay_for(1), policy.delay_for(2)] == [0.1, 0.2]
            poison = next(r for r in history if r.ack_type == "POISON")
            assert poison.detail is not None and "Delivery[3] exceeds redelivery policy limit" in poison.detail
            assert [r.transaction_id is not None for r in history if r.ack_type == "STANDARD"] == [True] * 3
            assert next(r for r in history if r.event == "dead-lettered").destination == "queue://ActiveMQ.DLQ"
