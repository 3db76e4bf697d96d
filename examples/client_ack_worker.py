"""A batch worker: CLIENT acknowledge and recover().

It takes up to ``batch_size`` jobs, writes them to its store in one go, and acknowledges the batch with one
``acknowledge()`` (CLIENT mode acks everything delivered on the session). If the store write fails, ``recover()``
hands the whole batch back for redelivery: nothing is lost, nothing is acked twice.

Run it: ``python examples/client_ack_worker.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, ReceivedMessage, connect

JOBS = "jobs"


class StoreUnavailable(Exception):
    pass


class BatchWorker:
    def __init__(self, connection: Connection, write: Callable[[list[str]], None], batch_size: int = 10) -> None:
        self.connection = connection
        self.write = write
        self.batch_size = batch_size

    async def run(self, *, idle_timeout: float = 5.0) -> None:
        session = await self.connection.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        consumer = await session.create_consumer(JOBS)
        while True:
            batch: list[ReceivedMessage] = []
            while len(batch) < self.batch_size:
                msg = await consumer.receive(timeout=idle_timeout if not batch else 0)
                if msg is None:
                    break
                batch.append(msg)
            if not batch:
                return
            try:
                self.write([m.text for m in batch])
            except StoreUnavailable:
                await session.recover()  # everything unacked comes back, redelivered, after the policy delay
                continue
            await batch[-1].acknowledge()  # acks the whole batch (CLIENT mode: the whole session)


async def main() -> None:
    written: list[str] = []
    failures = iter([True, False, False, False])

    def write(rows: list[str]) -> None:
        if next(failures, False):
            raise StoreUnavailable("store is restarting")
        written.extend(rows)

    # virtual time: the retry delays and idle timeouts pass at once (drop the clock to watch them in real time)
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer(JOBS)
        for i in range(25):
            await producer.send(f"job-{i}")
        await BatchWorker(conn, write).run(idle_timeout=2.0)
        print(f"written {len(written)} jobs, {len(set(written))} distinct; queue size {broker.queue(JOBS).size}")


if __name__ == "__main__":
    asyncio.run(main())
