"""minibroker benchmarks: ``.venv/bin/python tests/benchmarks/run.py [--quick] [--only NAME ...]``.

Each scenario is measured against a baseline taken in the same run, and printed as a ratio: these machines are shared
and noisy, so a lone absolute time means little. Not part of the default test run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from minibroker import Broker
from minibroker.client import AckMode, connect


@dataclass
class Row:
    scenario: str
    value: float
    unit: str
    baseline: str
    ratio: float | None
    target: str
    ok: bool | None

    def render(self) -> str:
        ratio = "-" if self.ratio is None else f"{self.ratio:.3f}"
        verdict = "-" if self.ok is None else ("pass" if self.ok else "FAIL")
        return (f"{self.scenario:<44} {self.value:>14,.1f} {self.unit:<8} {self.baseline:<34} {ratio:>7} "
                f"{self.target:<14} {verdict}")


BODY = "x" * 100


def best_of(runs: int, fn: Callable[[], Awaitable[float]]) -> float:
    """The best (smallest) of ``runs`` timings: the least disturbed by the other tenants of the machine."""
    times = [asyncio.run(fn()) for _ in range(runs)]
    return min(times)


# -- baselines ------------------------------------------------------------------------------------------------------

async def asyncio_queue_pair(n: int) -> float:
    """A raw asyncio.Queue producer/consumer pair moving ``n`` items: the in-process baseline."""
    queue: asyncio.Queue[str] = asyncio.Queue()

    async def produce() -> None:
        for _ in range(n):
            await queue.put(BODY)

    async def consume() -> None:
        for _ in range(n):
            await queue.get()

    start = time.perf_counter()
    await asyncio.gather(produce(), consume())
    return time.perf_counter() - start


# -- scenarios ------------------------------------------------------------------------------------------------------

async def inprocess_pair(n: int, mode: AckMode = AckMode.AUTO_ACKNOWLEDGE, prefetch: int = 1000) -> float:
    """One producer task and one consumer task through an in-process broker."""
    async with Broker(history_limit=0) as broker, await connect(broker) as conn:
        psession = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
        csession = await conn.create_session(mode)
        producer = await psession.create_producer("bench")
        consumer = await csession.create_consumer("bench", prefetch=prefetch)
        transacted = mode is AckMode.SESSION_TRANSACTED
        client = mode is AckMode.CLIENT_ACKNOWLEDGE

        async def produce() -> None:
            for _ in range(n):
                await producer.send(BODY)

        async def consume() -> None:
            for i in range(1, n + 1):
                msg = await consumer.receive()
                assert msg is not None
                if (transacted or client) and i % 100 == 0:
                    if transacted:
                        await csession.commit()
                    else:
                        await msg.acknowledge()

        start = time.perf_counter()
        await asyncio.gather(produce(), consume())
        elapsed = time.perf_counter() - start
        assert broker.queue("bench").size == 0
        return elapsed


async def start_stop(n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        async with Broker():
            pass
    return (time.perf_counter() - start) / n


async def memory_queued(n: int) -> float:
    """Bytes held by ``n`` queued 100-byte messages (tracemalloc, after the sends)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    broker = Broker(history_limit=0)
    async with broker, await connect(broker) as conn:
        session = await conn.create_session()
        producer = await session.create_producer("mem")
        for _ in range(n):
            await producer.send(BODY)
        gc.collect()
        after = tracemalloc.take_snapshot()
        size = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
        assert broker.queue("mem").size == n
    tracemalloc.stop()
    return float(size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer messages and runs (a smoke test)")
    parser.add_argument("--only", nargs="*", help="run only scenarios whose name contains one of these words")
    args = parser.parse_args(argv)
    n = 20_000 if args.quick else 100_000
    runs = 1 if args.quick else 3
    rows: list[Row] = []

    def wanted(name: str) -> bool:
        return not args.only or any(word in name for word in args.only)

    base = best_of(runs, lambda: asyncio_queue_pair(n))
    base_rate = n / base
    base_text = f"asyncio.Queue pair {base_rate:,.0f}/s"
    for name, mode, target in (
        ("in-process AUTO p1000", AckMode.AUTO_ACKNOWLEDGE, 0.2),
        ("in-process CLIENT p1000 (ack every 100)", AckMode.CLIENT_ACKNOWLEDGE, None),
        ("in-process TRANSACTED p1000 (commit every 100)", AckMode.SESSION_TRANSACTED, None),
    ):
        if not wanted(name):
            continue
        elapsed = best_of(runs, lambda mode=mode: inprocess_pair(n, mode))  # type: ignore[misc]
        rate = n / elapsed
        ratio = rate / base_rate
        rows.append(Row(name, rate, "msg/s", base_text, ratio,
                        "-" if target is None else f">= {target}", None if target is None else ratio >= target))
    if wanted("start"):
        per = best_of(runs, lambda: start_stop(2_000))
        rows.append(Row("broker start+stop, in-process", per * 1e3, "ms", "-", None, "<= 0.1 ms", per <= 1e-4))
    if wanted("memory"):
        size = asyncio.run(memory_queued(n))
        per_100k = size * (100_000 / n) / 1e6
        rows.append(Row("memory per 100k queued 100-byte messages", per_100k, "MB", "-", None, "<= 60 MB",
                        per_100k <= 60))
    header = f"{'scenario':<44} {'value':>14} {'unit':<8} {'baseline':<34} {'ratio':>7} {'target':<14} result"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(row.render())
    failed = [r for r in rows if r.ok is False]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

