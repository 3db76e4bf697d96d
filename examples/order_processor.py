"""An order processor: transacted consumption with retries.

Each order is charged through a payment gateway inside a transaction: the charge and the "order paid" event commit
together, or the order is rolled back and redelivered after the redelivery policy's delay. An order that keeps
failing ends on the dead-letter queue, where operations can look at it.

Run it: ``python examples/order_processor.py`` (an in-process broker with a flaky gateway).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, RedeliveryPolicy, connect

ORDERS = "orders"
PAID = "orders.paid"
#: retry a failing order 3 times, 2 s then 4 s then 8 s apart, then give up (ActiveMQ.DLQ)
POLICY = RedeliveryPolicy(
    maximum_redeliveries=3,
    initial_redelivery_delay=2.0,
    redelivery_delay=2.0,
    use_exponential_backoff=True,
    backoff_multiplier=2.0,
)


class PaymentDeclined(Exception):
    pass


class OrderProcessor:
    """Consumes ``orders``, charges each one, publishes ``orders.paid`` in the same transaction."""

    def __init__(self, connection: Connection, charge: Callable[[str, int], None]) -> None:
        self.connection = connection
        self.charge = charge
        self.paid: list[str] = []

    async def run(self, *, idle_timeout: float = 30.0) -> None:
        """Process orders until none arrives for ``idle_timeout`` seconds."""
        session = await self.connection.create_session(AckMode.SESSION_TRANSACTED)
        consumer = await session.create_consumer(ORDERS)
        paid = await session.create_producer(PAID)
        while (msg := await consumer.receive(timeout=idle_timeout)) is not None:
            order = json.loads(msg.text)
            try:
                self.charge(order["id"], order["cents"])
            except PaymentDeclined:
                await session.rollback()  # redelivered after the policy's delay; DLQ once exhausted
                continue
            await paid.send(json.dumps({"id": order["id"]}), correlation_id=msg.message_id)
            await session.commit()
            self.paid.append(order["id"])


async def place_order(connection: Connection, order_id: str, cents: int) -> str:
    session = await connection.create_session()
    producer = await session.create_producer(ORDERS)
    return await producer.send(json.dumps({"id": order_id, "cents": cents}))


async def main() -> None:
    attempts: dict[str, int] = {}

    def flaky_gateway(order_id: str, cents: int) -> None:
        attempts[order_id] = attempts.get(order_id, 0) + 1
        if order_id == "A-2" and attempts[order_id] < 3:
            raise PaymentDeclined("gateway timeout")
        if order_id == "A-3":
            raise PaymentDeclined("card expired")

    # virtual time: the retry delays and idle timeouts pass at once (drop the clock to watch them in real time)
    clock = ManualClock(autojump=True)
    async with Broker(clock=clock) as broker, await connect(broker, redelivery_policy=POLICY) as conn:
        for i, cents in enumerate((1200, 999, 4500), start=1):
            await place_order(conn, f"A-{i}", cents)
        processor = OrderProcessor(conn, flaky_gateway)
        await processor.run(idle_timeout=16.0)
        print("paid:", processor.paid)
        print("attempts:", attempts)
        print("dead letters:", [m.body for m in broker.queue("ActiveMQ.DLQ").browse()])


if __name__ == "__main__":
    asyncio.run(main())
