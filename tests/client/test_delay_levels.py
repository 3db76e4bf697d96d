"""RocketMQ-style retries (DelayLevelPolicy): %RETRY%<group>, delay levels, reconsumeTimes, %DLQ%<group>."""

from __future__ import annotations

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, DelayLevelPolicy, ReceivedMessage, connect


class TestDelayLevelRetry:
    async def test_retries_follow_the_levels_then_the_group_dlq(self) -> None:
        """A listener that always fails sees the message again after 10 s, 30 s, 1 min ... (level 3 +
        reconsumeTimes), each copy carrying RETRY_TOPIC/ORIGIN_MESSAGE_ID/reconsumeTimes, and after
        max_reconsume_times retries it lands on %DLQ%<group>."""
        clock = ManualClock()
        policy = DelayLevelPolicy(max_reconsume_times=3)
        async with Broker(clock=clock, scheduler_support=True) as broker, await connect(broker) as conn:
            session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
            producer = await session.create_producer("orders")
            original_id = await producer.send("o-1")
            consumer = await session.create_consumer("orders", redelivery_policy=policy, group="billing")
            seen: list[tuple[float, ReceivedMessage]] = []

            def fail(msg: ReceivedMessage) -> None:
                seen.append((clock.elapsed, msg))
                raise RuntimeError("downstream unavailable")

            consumer.set_listener(fail)
            await broker.run_ready()
            for _ in range(4):
                deadline = clock.next_deadline()
                if deadline is None:
                    break
                await clock.advance_to(deadline)
            times = [t for t, _ in seen]
            # waits of 10 s, 30 s, 60 s (levels 3, 4, 5), each from ActiveMQ's job start: the send time rounded up
            # to the next half second
            assert times == [0, 10.5, 41.0, 101.5]
            assert [m.get_property("reconsumeTimes") for _, m in seen[1:]] == [1, 2, 3]
            assert all(m.get_property("ORIGIN_MESSAGE_ID") == original_id for _, m in seen[1:])
            assert all(m.get_property("RETRY_TOPIC") == "orders" for _, m in seen[1:])
            assert [m.destination.name for _, m in seen[1:]] == ["%RETRY%billing"] * 3
            dead = broker.queue("%DLQ%billing").browse()
            assert [m.body for m in dead] == ["o-1"]
            assert broker.queue("orders").size == 0 and broker.queue("%RETRY%billing").size == 0

    def test_schedule_explains_itself(self) -> None:
        """The policy lists its own schedule: the delays the test above observed."""
        steps = DelayLevelPolicy(max_reconsume_times=3).explain(group="billing")
        assert [round(s.delay) for s in steps[1:]] == [10, 30, 60]
