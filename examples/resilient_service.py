"""A service that survives a dropped connection (ActiveMQ ``failover:``).

It consumes ``payments`` with a fault-tolerant connection in CLIENT mode and acknowledges each payment after
booking it. When the connection drops between booking and acknowledging, the broker dispatches the payment again
after the reconnect; the client recognises it as a duplicate and poison-acks it, so it lands in the DLQ with
"Suppressing duplicate delivery on connection" instead of being booked twice: exactly what ActiveMQ does, and
what this service's operators must know to look for.

Run it: ``python examples/resilient_service.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, ReceivedMessage, connect

PAYMENTS = "payments"


class PaymentService:
    def __init__(self, connection: Connection, after_booking: Callable[[ReceivedMessage], Awaitable[None]]) -> None:
        self.connection = connection
        self.after_booking = after_booking
        self.booked: list[str] = []

    async def run(self, *, idle_timeout: float = 5.0) -> None:
        session = await self.connection.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        consumer = await session.create_consumer(PAYMENTS)
        while (msg := await consumer.receive(timeout=idle_timeout)) is not None:
            self.booked.append(msg.text)
            await self.after_booking(msg)
            if not self.connection.closed:
                await msg.acknowledge()


async def main() -> None:
    # virtual time: the retry delays and idle timeouts pass at once (drop the clock to watch them in real time)
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        producer_conn = await connect(broker)
        producer = await (await producer_conn.create_session()).create_producer(PAYMENTS)
        for i in range(3):
            await producer.send(f"payment-{i}")
        conn = await connect(broker, fault_tolerant=True)

        async def network_blip(msg: ReceivedMessage) -> None:
            if msg.text == "payment-1" and not msg.redelivered:
                broker.drop_connections(None)
                await conn.wait_reconnected()

        service = PaymentService(conn, network_blip)
        await service.run(idle_timeout=2.0)
        print("booked:", service.booked)
        for letter in broker.queue("ActiveMQ.DLQ").browse():
            print("DLQ:", letter.body, "-", letter.properties["dlqDeliveryFailureCause"])
        await conn.close()
        await producer_conn.close()


if __name__ == "__main__":
    asyncio.run(main())
