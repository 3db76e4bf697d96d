"""Restart at scale (issue 21, target 5): ``minibroker serve --data-dir`` on a store holding N persistent messages,
timed from launch to the first answer to a client, with the server's peak RSS (``VmHWM``) until then. The store is
written directly (``SqliteStore.apply``), as a broker would have written it. Linux only (``/proc``).

    .venv/bin/python tests/benchmarks/restart_bench.py [N]
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import attrs

from minibroker._core.journal import Stored
from minibroker.message import Destination, Message
from minibroker.store import SqliteStore
from minibroker.transport.commands import GetQueueStatistics
from minibroker.transport.tcp_link import TcpLink

MINIBROKER = Path(sys.executable).with_name("minibroker")


@attrs.frozen
class Restart:
    messages: int
    first_answer_s: float
    peak_rss_mb: float


def fill(directory: Path, count: int) -> None:
    """``count`` persistent messages of about 80 bytes in one queue, in batches of 20,000."""
    store = SqliteStore(directory)
    queue = Destination.queue("big")
    batch: list[Stored] = []
    for i in range(count):
        body = f"message body number {i:08d} " + "x" * 40
        message = Message(f"ID:bench-1:1:1:1:{i}", queue, body, producer_id="bench-1:1:1:1", producer_seq=i)
        batch.append(Stored("big", i, message, 0))
        if len(batch) == 20_000:
            store.apply(batch)
            batch = []
    store.apply(batch)
    store.close()


def _peak_rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (FileNotFoundError, StopIteration):
        return 0


async def restart(directory: Path, count: int) -> Restart:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(MINIBROKER), "serve", "--port", "0", "--data-dir", str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _peak_rss_kb(proc.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        assert proc.stdout is not None
        url = next(word for word in proc.stdout.readline().split() if word.startswith("tcp://"))
        link = await TcpLink.open_url(url)
        await link.open(None)
        stats = await link.request(GetQueueStatistics("big"))
        elapsed = time.perf_counter() - start
        await link.close(-1)
        assert stats is not None and stats.size == count, stats
    finally:
        done.set()
        sampler.join()
        peak = max(peak, _peak_rss_kb(proc.pid))
        proc.terminate()
        proc.wait()
    return Restart(count, elapsed, peak / 1024)


def measure(count: int) -> Restart:
    with tempfile.TemporaryDirectory() as tmp:
        fill(Path(tmp), count)
        return asyncio.run(restart(Path(tmp), count))


if __name__ == "__main__":
    result = measure(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
    print(
        f"{result.messages:,} stored messages: first answer after {result.first_answer_s:.2f} s, "
        f"peak RSS {result.peak_rss_mb:.0f} MiB"
    )
