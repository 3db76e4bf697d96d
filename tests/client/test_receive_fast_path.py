"""receive()'s fast path (a plain message already in the prefetch buffer) against its reference, the general path.

Seeded random operation sequences run twice on fresh in-process brokers in virtual time: once as shipped, once with
``FAST_RECEIVE`` off, so that every receive() takes the general path. What the application sees (each receive's message,
redelivery flag and delivery count, the errors of misuse), the acks the broker recorded and the queue's statistics
must be identical.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Consumer, ReceivedMessage, RedeliveryPolicy, Session, connect
from minibroker.client import _consumer as consumer_module
from minibroker.errors import MinibrokerError

MODES = [
    AckMode.AUTO_ACKNOWLEDGE,
    AckMode.CLIENT_ACKNOWLEDGE,
    AckMode.DUPS_OK_ACKNOWLEDGE,
    AckMode.INDIVIDUAL_ACKNOWLEDGE,
    AckMode.SESSION_TRANSACTED,
]


class Walk:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seen: list[Any] = []
        self.received: list[ReceivedMessage] = []

    async def step(self, step: int, clock: ManualClock, session: Session, consumer: Consumer) -> Consumer:
        rng, mode = self.rng, session.ack_mode
        op = rng.random()
        if op < 0.35:
            producer = await session.create_producer("q")
            await producer.send(f"m{step}", priority=rng.randint(0, 9), ttl=rng.choice([None, None, 0.5]))
            if mode is AckMode.SESSION_TRANSACTED:
                await session.commit()
        elif op < 0.7:
            msg = await consumer.receive(timeout=0)
            self.seen.append(None if msg is None else (msg.body, msg.redelivered, msg.delivery_count))
            if msg is not None:
                self.received.append(msg)
        elif op < 0.8 and self.received:
            if mode is AckMode.SESSION_TRANSACTED:
                await (session.commit() if rng.random() < 0.5 else session.rollback())
            elif mode in (AckMode.CLIENT_ACKNOWLEDGE, AckMode.INDIVIDUAL_ACKNOWLEDGE):
                await rng.choice(self.received).acknowledge()
            self.received.clear()
        elif op < 0.9 and mode is not AckMode.SESSION_TRANSACTED:
            await session.recover()
            self.received.clear()
        elif op < 0.95:
            await clock.advance(0.3)
        else:
            await consumer.close()
            consumer = await session.create_consumer("q", prefetch=rng.choice([1, 3, 1000]))
        return consumer

    async def run(self) -> list[Any]:
        rng = self.rng
        clock = ManualClock()
        async with Broker(clock=clock) as broker:
            policy = RedeliveryPolicy(
                maximum_redeliveries=rng.choice([-1, 0, 1, 2]), initial_redelivery_delay=0.0, redelivery_delay=0.0
            )
            async with await connect(broker, redelivery_policy=policy) as conn:
                session = await conn.create_session(rng.choice(MODES))
                consumer = await session.create_consumer("q", prefetch=rng.choice([1, 3, 1000]))
                for step in range(60):
                    try:
                        consumer = await self.step(step, clock, session, consumer)
                    except MinibrokerError as exc:  # misuse the walk runs into (acking after a close, ...)
                        self.seen.append(("error", type(exc).__name__))
                stats = broker.queue("q").statistics()
                self.seen.append(("stats", stats.size, stats.inflight, stats.enqueued, stats.dequeued, stats.expired))
                for message in broker.queue("q").browse():
                    events = [(r.event, r.ack_type) for r in broker.history(message.message_id)]
                    self.seen.append(("history", message.body, events))
        return self.seen


@pytest.mark.parametrize("seed", range(60))
async def test_fast_path_receives_as_the_reference(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = await Walk(seed).run()
    monkeypatch.setattr(consumer_module, "FAST_RECEIVE", False)
    reference = await Walk(seed).run()
    assert fast == reference, f"seed={seed}"
    assert any(isinstance(x, tuple) and len(x) == 3 for x in fast), f"seed={seed}: nothing was received"
