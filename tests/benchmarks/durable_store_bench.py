"""Offline durable subscribers on a persistent broker (issue 31, item 1): the store's size, what a send costs, and a
restart, against the issue's targets, with a send to one durable subscriber measured in the same run as the baseline.

    .venv/bin/python tests/benchmarks/durable_store_bench.py [--subscribers 1000] [--messages 200]

The issue's row is 1,000 subscribers x 2,000 persistent 1 KB sends (``--messages 2000``: about two minutes). The
restart runs in a fresh process, so its peak memory is the restart's alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from minibroker import Broker
from minibroker.client import connect

BODY = "x" * 1024


async def fill(directory: str, subscribers: int, messages: int) -> float:
    """Make ``subscribers`` offline durable subscriptions and publish ``messages``; seconds per send."""
    async with Broker(data_dir=directory, history_limit=0) as broker:
        async with await connect(broker, client_id="bench") as conn:
            session = await conn.create_session()
            for i in range(subscribers):
                await (await session.create_durable_subscriber("topic://audit", f"s{i}")).close()
        async with await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("topic://audit")
            start = time.perf_counter()
            for _ in range(messages):
                await producer.send(BODY, persistent=True)
            return (time.perf_counter() - start) / messages


RESTART = """
import asyncio, json, resource, sys, time
from minibroker import Broker
async def main():
    start = time.perf_counter()
    async with Broker(data_dir=sys.argv[1], history_limit=0):
        seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
asyncio.run(main())
"""


def restart(directory: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", RESTART, directory], capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def row(name: str, figure: str, target: str, ok: bool) -> None:
    print(f"{name:<52} {figure:>28}   target {target:<26} {'pass' if ok else 'FAIL'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=200)
    args = parser.parse_args()
    n, m = args.subscribers, args.messages
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as many:
        baseline = asyncio.run(fill(one, 1, m))
        per_send = asyncio.run(fill(many, n, m))
        size = sum(f.stat().st_size for f in Path(many).iterdir() if f.is_file())
        back = restart(many)
    bound = 2 * (m * len(BODY) + 100 * n * m)
    print(f"{n} offline durable subscribers x {m} persistent 1 KB sends (baseline: 1 subscriber, same run)")
    row("store size", f"{size / 1e6:.1f} MB", f"<= {bound / 1e6:.0f} MB", size <= bound)
    ratio = per_send / baseline
    row("a send", f"{per_send * 1000:.2f} ms = {ratio:.0f}x", "<= 2x one subscriber", ratio <= 2)
    row(
        "restart",
        f"{back['seconds']:.2f} s, {back['rss_mb']:.0f} MB",
        "<= 2 s, <= 300 MB",
        back["seconds"] <= 2 and back["rss_mb"] <= 300,
    )


if __name__ == "__main__":
    main()
