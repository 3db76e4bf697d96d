"""Seeded random redelivery policies: the delays a consumer really waits are the ones the policy explains."""

from __future__ import annotations

import itertools
import random

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, RedeliveryPolicy, connect
from minibroker.testing import delivery_history

SEEDS = range(40)


def random_policy(rng: random.Random) -> RedeliveryPolicy:
    return RedeliveryPolicy(
        maximum_redeliveries=rng.choice([0, 1, 2, 3, 5]),
        initial_redelivery_delay=rng.choice([0.0, 0.001, 0.05, 0.1, 1.0]),
        redelivery_delay=rng.choice([0.0, 0.02, 0.1, 1.0, 2.5]),
        use_exponential_backoff=rng.random() < 0.5,
        backoff_multiplier=rng.choice([1.5, 2.0, 5.0]),
        maximum_redelivery_delay=rng.choice([None, 0.25, 3.0]),
    )


@pytest.mark.parametrize("seed", SEEDS)
async def test_waits_follow_the_explained_schedule(seed: int) -> None:
    """For a random policy and ack mode (rollback, recover or a failing AUTO listener): the message is delivered
    exactly 1 + maximum_redeliveries times, each redelivery after the delay the policy's explain() lists, and it
    is dead-lettered only after the last one (never before its limit)."""
    rng = random.Random(seed)
    policy = random_policy(rng)
    how = rng.choice(["rollback", "recover", "listener"])
    clock = ManualClock(autojump=True)
    async with Broker(clock=clock) as broker, await connect(broker, redelivery_policy=policy) as conn:
        mode = {
            "rollback": AckMode.SESSION_TRANSACTED,
            "recover": AckMode.CLIENT_ACKNOWLEDGE,
            "listener": AckMode.AUTO_ACKNOWLEDGE,
        }[how]
        session = await conn.create_session(mode)
        producer = await (await conn.create_session()).create_producer("q")
        message_id = await producer.send("m")
        consumer = await session.create_consumer("q")
        times: list[float] = []
        if how == "listener":

            def fail(_msg: object) -> None:
                times.append(clock.elapsed)
                assert not broker.queue("ActiveMQ.DLQ").exists, f"seed {seed}: dead-lettered before its limit"
                raise RuntimeError("always fails")

            consumer.set_listener(fail)
            await broker.settled(timeout=3600)
        else:
            while await consumer.receive(timeout=3600) is not None:
                times.append(clock.elapsed)
                assert not broker.queue("ActiveMQ.DLQ").exists, f"seed {seed}: dead-lettered before its limit"
                await (session.rollback() if how == "rollback" else session.recover())
        plan = policy.explain()
        expected_waits = [step.delay for step in plan[1:]]
        waits = [round(b - a, 6) for a, b in itertools.pairwise(times)]
        assert len(times) == len(plan) == 1 + policy.maximum_redeliveries, (seed, policy, how, times)
        assert waits == pytest.approx(expected_waits), (seed, policy, how)
        assert delivery_history(broker, message_id).redelivery_delays == pytest.approx(expected_waits)
        assert [m.message_id for m in broker.queue("ActiveMQ.DLQ").browse()] == [message_id], (seed, how)
