"""What a test suite pays: 1,000 pytest tests on the ``minibroker`` fixture against the same 1,000 tests on a bare
``asyncio.Queue`` fixture (issue 21, target 4: at most 1.5x). Each test sends one message and receives it; the
fixture's set-up and teardown checks are included, as in a user's suite.

    .venv/bin/python tests/benchmarks/suite_bench.py [--tests N] [--runs K]

Both suites run in fresh ``pytest`` processes, in turns (best of ``runs`` each), so a slow spell of a shared machine
touches both sides of the ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""

MINIBROKER_SUITE = '''"""{n} tests on the minibroker fixture."""
import pytest

from minibroker.client import AckMode


@pytest.mark.parametrize("i", range({n}))
async def test_one_message(i, minibroker_connection):
    session = await minibroker_connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
    producer = await session.create_producer("orders")
    await producer.send(f"m{{i}}")
    consumer = await session.create_consumer("orders")
    msg = await consumer.receive(timeout=1)
    assert msg is not None and msg.body == f"m{{i}}"
'''

QUEUE_SUITE = '''"""The same {n} tests on a bare asyncio.Queue fixture."""
import asyncio

import pytest
import pytest_asyncio


@pytest_asyncio.fixture
async def queue():
    yield asyncio.Queue()


@pytest.mark.parametrize("i", range({n}))
async def test_one_message(i, queue):
    await queue.put(f"m{{i}}")
    msg = await asyncio.wait_for(queue.get(), 1)
    assert msg == f"m{{i}}"
'''


@dataclass
class SuiteFigures:
    tests: int
    minibroker_s: float
    queue_s: float

    @property
    def ratio(self) -> float:
        return self.minibroker_s / self.queue_s


def _run(directory: Path, test_file: str, tests: int) -> float:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", test_file],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0 or f"{tests} passed" not in done.stdout:
        raise RuntimeError(f"{test_file} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return elapsed


def measure(tests: int = 1000, runs: int = 3) -> SuiteFigures:
    with tempfile.TemporaryDirectory(prefix="minibroker-suite-") as tmp:
        directory = Path(tmp)
        (directory / "pytest.ini").write_text(INI)
        (directory / "test_minibroker_suite.py").write_text(MINIBROKER_SUITE.format(n=tests))
        (directory / "test_queue_suite.py").write_text(QUEUE_SUITE.format(n=tests))
        queue: list[float] = []
        broker: list[float] = []
        for _ in range(runs):
            queue.append(_run(directory, "test_queue_suite.py", tests))
            broker.append(_run(directory, "test_minibroker_suite.py", tests))
    return SuiteFigures(tests, min(broker), min(queue))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    f = measure(args.tests, args.runs)
    print(
        f"{f.tests:,} tests: minibroker fixture {f.minibroker_s:.2f} s, asyncio.Queue fixture {f.queue_s:.2f} s, "
        f"ratio {f.ratio:.2f} (target <= 1.5)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
