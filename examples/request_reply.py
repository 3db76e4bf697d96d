"""A request/reply pair: a price service answers quotes on the queue named in each request's reply-to, with the
request's message id as the correlation id. Each client receives its answers on a temporary queue of its own
connection (JMS's ``createTemporaryQueue()``): no other connection can read it, and it goes away with the client.

Run it: ``python examples/request_reply.py``.
"""

from __future__ import annotations

import asyncio
import json

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, ReceivedMessage, connect

REQUESTS = "prices.requests"
PRICES = {"apple": 120, "pear": 95}


class PriceService:
    """Answers each request on its reply-to queue."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    async def start(self) -> None:
        session = await self.connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
        producer = await session.create_producer()
        consumer = await session.create_consumer(REQUESTS)

        async def answer(msg: ReceivedMessage) -> None:
            item = json.loads(msg.text)["item"]
            reply = {"item": item, "cents": PRICES.get(item)}
            assert msg.reply_to is not None
            await producer.send(json.dumps(reply), destination=msg.reply_to, correlation_id=msg.message_id)

        consumer.set_listener(answer)


class PriceClient:
    """Sends a request and waits for the reply with the matching correlation id, on a temporary queue."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    async def quote(self, item: str, *, timeout: float = 5.0) -> int | None:
        session = await self.connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
        producer = await session.create_producer(REQUESTS)
        reply_queue = await session.create_temporary_queue()
        replies = await session.create_consumer(reply_queue)
        request_id = await producer.send(json.dumps({"item": item}), reply_to=reply_queue)
        try:
            while (msg := await replies.receive(timeout=timeout)) is not None:
                if msg.correlation_id == request_id:
                    cents: int | None = json.loads(msg.text)["cents"]
                    return cents
            raise TimeoutError(f"no reply to {request_id} within {timeout} s")
        finally:
            await session.close()
            await reply_queue.delete()  # else it lives as long as the connection


async def main() -> None:
    # virtual time: the retry delays and idle timeouts pass at once (drop the clock to watch them in real time)
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        await PriceService(conn).start()
        client = PriceClient(conn)
        for item in ("apple", "pear", "kiwi"):
            print(item, await client.quote(item))


if __name__ == "__main__":
    asyncio.run(main())
