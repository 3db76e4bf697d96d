#!/usr/bin/env python3
"""Fan-out at scale (issue 31): what a wildcard or composite subscription costs as the broker grows, each against the
small case measured in the same run (CPU seconds of this process, best of ``--runs``).

    .venv/bin/python tests/benchmarks/scale_bench.py [--runs 3] [--retained 50000]

Rows: a ``data.>`` subscriber's 2,000 messages while 0 / 8,000 other topics have subscribers (target: <= 1.5x);
a consumer on a composite of 2,000 existing queues (target: <= 100 ms); a retroactive ``r.>`` subscriber (an MQTT
``#``) replaying N retained topics, the broker's part of the MQTT scenario (target: <= 2 s for 50,000).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any

from minibroker import Broker, ConsumerInfo, Destination, ManualClock, Message


def best(runs: int, scenario: Callable[[], Coroutine[Any, Any, float]]) -> float:
    return min(asyncio.run(scenario()) for _ in range(runs))


async def wildcard(other_topics: int) -> float:
    async with Broker(clock=ManualClock(), history_limit=0) as broker:
        for start in range(0, other_topics, 900):  # at most 1,000 consumers per connection
            conn = broker.connect()
            for i in range(start, min(start + 900, other_topics)):
                conn.add_consumer(ConsumerInfo(Destination.topic(f"other.{i}"), prefetch=10), lambda d: None)
        conn = broker.connect()
        got: list[Any] = []
        sub = conn.add_consumer(ConsumerInfo(Destination.topic("data.>"), prefetch=1000), got.append)
        start_cpu = time.process_time()
        for i in range(2000):
            conn.send(Message(f"ID:{i}", Destination.topic("data.x"), "x"))
            conn.ack_one(sub, got[-1].message.message_id)
        return time.process_time() - start_cpu


async def composite(queues: int) -> float:
    async with Broker(clock=ManualClock(), history_limit=0) as broker:
        conn = broker.connect()
        for i in range(queues):
            conn.send(Message(f"ID:{i}", Destination.queue(f"q{i}"), "x"))
        name = ",".join(f"q{i}" for i in range(queues))
        start_cpu = time.process_time()
        conn.add_consumer(ConsumerInfo(Destination.queue(name), prefetch=10), lambda d: None)
        return time.process_time() - start_cpu


async def retained(topics: int) -> float:
    async with Broker(clock=ManualClock(), history_limit=0) as broker:
        conn = broker.connect()
        for i in range(topics):
            conn.send(Message(f"ID:{i}", Destination.topic(f"r.{i}"), b"v", {"ActiveMQ.Retain": True}))
        got: list[Any] = []
        start_cpu = time.process_time()
        sub = conn.add_consumer(ConsumerInfo(Destination.topic("r.>"), prefetch=100, retroactive=True), got.append)
        acked = 0
        while acked < len(got):
            conn.ack_one(sub, got[acked].message.message_id)
            acked += 1
        assert acked == topics
        return time.process_time() - start_cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="runs of each case (default 3)")
    parser.add_argument("--retained", type=int, default=50_000, help="retained topics (default 50,000)")
    args = parser.parse_args(argv)
    failed = False

    def row(name: str, figure: str, ok: bool) -> None:
        nonlocal failed
        failed = failed or not ok
        print(f"{name:<62} {figure:>34}  {'pass' if ok else 'FAIL'}")

    small, large = best(args.runs, lambda: wildcard(0)), best(args.runs, lambda: wildcard(8000))
    row(
        "wildcard subscriber, 2,000 messages: 8,000 other topics / 0",
        f"{large:.3f} / {small:.3f} s = {large / small:.2f}x",
        large / small <= 1.5,
    )
    one, many = best(args.runs, lambda: composite(1)), best(args.runs, lambda: composite(2000))
    row(
        "composite consumer over 2,000 queues (baseline: 1 queue)",
        f"{many * 1000:.0f} ms (1 queue: {one * 1000:.1f} ms)",
        many <= 0.1,
    )
    base, replay = best(1, lambda: retained(100)), best(1, lambda: retained(args.retained))
    row(
        f"retroactive r.> over {args.retained:,} retained topics (100: baseline)",
        f"{replay:.2f} s ({base * 1000:.0f} ms)",
        replay <= 2.0,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
