"""The broker redelivery plugin (``minibroker.plugins.redelivery``, ActiveMQ's ``RedeliveryPlugin``), on its own.

Its replay against the real broker is ``tests/conformance`` (``redelivery_plugin``,
``redelivery_plugin_short_delay_rejected``, ``stomp_redelivery_plugin``); these tests pin the rest of its contract.
"""

from __future__ import annotations

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, RedeliveryPolicy, connect
from minibroker.errors import IllegalStateError
from minibroker.plugins.redelivery import RedeliveryPlugin
from minibroker.testing import delivery_history


def _no_client_retries() -> RedeliveryPolicy:
    return RedeliveryPolicy(maximum_redeliveries=0)


async def _poison_once(broker: Broker, queue: str = "orders") -> None:
    """Send one message and reject it: a transacted rollback past the client's limit of 0 (a poison ack)."""
    async with await connect(broker, redelivery_policy=_no_client_retries()) as conn:
        producer_session = await conn.create_session()
        await (await producer_session.create_producer(queue)).send("m")
        session = await conn.create_session(AckMode.TRANSACTED)
        consumer = await session.create_consumer(queue)
        assert await consumer.receive(timeout=1) is not None
        await session.rollback()


class TestInstall:
    async def test_needs_scheduler_support(self) -> None:
        """ActiveMQ: 'RedeliveryPlugin requires schedulerSupport=true on the broker'."""
        with pytest.raises(IllegalStateError, match="schedulerSupport"):
            Broker(plugins=[RedeliveryPlugin(RedeliveryPolicy(initial_redelivery_delay=1.0))])

    async def test_refuses_a_delay_under_a_second(self) -> None:
        with pytest.raises(IllegalStateError, match="initialRedeliveryDelay must exceed: 1000"):
            Broker(scheduler_support=True, plugins=[RedeliveryPlugin(RedeliveryPolicy(initial_redelivery_delay=0.5))])


class TestRedelivery:
    async def test_redelivers_after_the_delay_then_dead_letters(self) -> None:
        """Each poison ack comes back after the policy's delay with the counter raised; past the maximum, the DLQ."""
        clock = ManualClock()
        plugin = RedeliveryPlugin(
            RedeliveryPolicy(maximum_redeliveries=2, initial_redelivery_delay=5.0, redelivery_delay=5.0)
        )
        async with Broker(clock=clock, scheduler_support=True, plugins=[plugin]) as broker:
            await _poison_once(broker)
            assert broker.queue("orders").size == 0 and broker.queue("ActiveMQ.DLQ").size == 0
            counters = []
            async with await connect(broker, redelivery_policy=_no_client_retries()) as conn:
                session = await conn.create_session(AckMode.TRANSACTED)
                consumer = await session.create_consumer("orders")
                for _ in range(2):
                    await clock.advance(5.0)
                    msg = await consumer.receive(timeout=0)
                    assert msg is not None and msg.properties["redeliveryDelay"] == 5000
                    counters.append(msg.redelivery_counter)
                    await session.rollback()
            assert counters == [1, 2]
            [letter] = broker.queue("ActiveMQ.DLQ").browse()
            assert letter.body == "m"
            # issue 32, item 3: the broker's own delays are in the history, as the client's are
            assert delivery_history(broker, letter.message_id).redelivery_delays == [5.0, 5.0]

    async def test_a_destination_without_a_policy_falls_back_to_the_dlq(self) -> None:
        plugin = RedeliveryPlugin(None, policies={"payments.>": RedeliveryPolicy(initial_redelivery_delay=1.0)})
        async with Broker(clock=ManualClock(), scheduler_support=True, plugins=[plugin]) as broker:
            await _poison_once(broker, "orders")
            assert broker.queue("ActiveMQ.DLQ").size == 1

    async def test_without_fallback_the_message_is_dropped(self) -> None:
        plugin = RedeliveryPlugin(
            None, policies={"payments.>": RedeliveryPolicy(initial_redelivery_delay=1.0)}, fallback_to_dead_letter=False
        )
        async with Broker(clock=ManualClock(), scheduler_support=True, plugins=[plugin]) as broker:
            await _poison_once(broker, "orders")
            assert broker.queue("ActiveMQ.DLQ").size == 0 and broker.queue("orders").size == 0
