"""Tests of the payment service across a connection drop: nothing booked twice, the duplicate is in the DLQ."""

from __future__ import annotations

import pytest
from resilient_service import PAYMENTS, PaymentService

from minibroker import Broker
from minibroker.client import ReceivedMessage, connect
from minibroker.testing import dead_letters


@pytest.mark.minibroker(allow_dead_letters=True)
async def test_a_drop_between_booking_and_ack_books_nothing_twice(minibroker: Broker) -> None:
    """The connection drops right after payment-1 is booked: after the reconnect payment-1 is suppressed as a
    duplicate (DLQ, ActiveMQ's cause text) and the others are booked exactly once."""
    producer_conn = await connect(minibroker)
    producer = await (await producer_conn.create_session()).create_producer(PAYMENTS)
    for i in range(3):
        await producer.send(f"payment-{i}")
    conn = await connect(minibroker, fault_tolerant=True)

    async def blip(msg: ReceivedMessage) -> None:
        if msg.text == "payment-1":
            minibroker.drop_connections(None)
            await conn.wait_reconnected()

    service = PaymentService(conn, blip)
    await service.run(idle_timeout=5)
    assert service.booked == ["payment-0", "payment-1", "payment-2"]
    [letter] = dead_letters(minibroker)
    assert letter.body == "payment-1"
    assert letter.cause is not None and "Suppressing duplicate delivery on connection" in letter.cause
    assert minibroker.queue(PAYMENTS).size == 0
    assert conn.reconnects == 1
    await conn.close()
    await producer_conn.close()
