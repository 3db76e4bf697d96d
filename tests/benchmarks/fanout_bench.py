"""Fan-out figures (issue 18): a virtual topic with 10 consumer queues, a plain topic with 10 subscribers, and a
topic with 100 durable subscribers, against one queue with one consumer, measured in turns in the same run (best of
each).

    .venv/bin/python tests/benchmarks/fanout_bench.py [--messages N] [--runs R]

Messages/s counts messages *published*; each publish to the fan-outs is delivered 10 (100) times, so the ratio of
deliveries per second is 10 (100) times the printed ratio. In-process, virtual time, AUTO acknowledge, prefetch 1000.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Consumer, connect

FAN = 10


async def one_queue(n: int) -> float:
    return await _run(n, "jobs", ["jobs"])


async def virtual_topic(n: int) -> float:
    return await _run(n, "topic://VirtualTopic.jobs", [f"Consumer.s{i}.VirtualTopic.jobs" for i in range(FAN)])


async def topic(n: int) -> float:
    return await _run(n, "topic://jobs", ["topic://jobs"] * FAN)


async def durable_100(n: int) -> float:
    return await _run(n // 10, "topic://jobs", [f"durable:{i}" for i in range(100)])


async def _run(n: int, target: str, sources: list[str]) -> float:
    async with Broker(clock=ManualClock(), history_limit=0) as broker, await connect(broker, client_id="b") as conn:
        session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
        consumers: list[Consumer] = []
        for s in sources:
            if s.startswith("durable:"):
                consumers.append(await session.create_durable_subscriber("topic://jobs", s, prefetch=1000))
            else:
                consumers.append(await session.create_consumer(s, prefetch=1000))
        producer = await session.create_producer(target)
        start = time.perf_counter()
        for i in range(n):
            await producer.send("x" * 100, persistent=False)
            if i % 500 == 499:
                for consumer in consumers:
                    while await consumer.receive(timeout=0) is not None:
                        pass
        for consumer in consumers:
            while await consumer.receive(timeout=0) is not None:
                pass
        elapsed = time.perf_counter() - start
        for source in sources:
            if not source.startswith(("topic://", "durable:")):
                assert broker.queue(source).dequeued == n, (source, broker.queue(source).dequeued)
        return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    best = {
        "one queue, one consumer": 0.0,
        "virtual topic, 10 consumer queues": 0.0,
        "topic, 10 subscribers": 0.0,
        "topic, 100 durable subscribers": 0.0,
    }
    for _ in range(args.runs):
        for name, fn in zip(best, (one_queue, virtual_topic, topic, durable_100), strict=True):
            best[name] = max(best[name], asyncio.run(fn(args.messages)))
    base = best["one queue, one consumer"]
    print(f"{'scenario (published messages/s, best of ' + str(args.runs) + ')':<52} {'msg/s':>10} {'ratio':>7}")
    for name, rate in best.items():
        print(f"{name:<52} {rate:>10,.0f} {rate / base:>7.3f}")


if __name__ == "__main__":
    main()
