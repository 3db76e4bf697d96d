"""Tests of the order processor: retries and the DLQ in virtual time (the retries span 14 s; the tests take ms)."""

from __future__ import annotations

import json

import pytest
from order_processor import PAID, POLICY, OrderProcessor, PaymentDeclined, place_order

from minibroker import Broker, ManualClock
from minibroker.client import Connection
from minibroker.testing import assert_dead_lettered, delivery_history

pytestmark = pytest.mark.minibroker(redelivery_policy=POLICY)


async def test_a_declined_payment_is_retried_until_it_succeeds(
    minibroker: Broker, minibroker_connection: Connection, manual_clock: ManualClock
) -> None:
    """Two declines, then success: the order is paid once, 2 s + 4 s after it was first tried."""
    attempts: list[float] = []

    def gateway(order_id: str, cents: int) -> None:
        attempts.append(manual_clock.elapsed)
        if len(attempts) < 3:
            raise PaymentDeclined("timeout")

    await place_order(minibroker_connection, "A-1", 1200)
    processor = OrderProcessor(minibroker_connection, gateway)
    await processor.run(idle_timeout=60)
    assert processor.paid == ["A-1"]
    assert [round(t) for t in attempts] == [0, 2, 6]
    [paid] = minibroker.queue(PAID).browse()
    assert json.loads(paid.body) == {"id": "A-1"}
    assert minibroker.queue("orders").size == 0


@pytest.mark.minibroker(redelivery_policy=POLICY, allow_dead_letters=True)
async def test_an_order_that_always_fails_ends_on_the_dlq(
    minibroker: Broker, minibroker_connection: Connection
) -> None:
    """Four attempts (the first and 3 redeliveries), then ActiveMQ.DLQ with the redelivery cause; nothing paid."""

    def gateway(order_id: str, cents: int) -> None:
        raise PaymentDeclined("card expired")

    message_id = await place_order(minibroker_connection, "A-9", 500)
    processor = OrderProcessor(minibroker_connection, gateway)
    await processor.run(idle_timeout=60)
    assert processor.paid == []
    assert_dead_lettered(minibroker, message_id, cause_contains="Delivery[4] exceeds redelivery policy limit")
    assert delivery_history(minibroker, message_id).redelivery_delays == [2.0, 4.0, 8.0]
    assert not minibroker.queue(PAID).exists or minibroker.queue(PAID).size == 0
