#!/usr/bin/env python3
"""Wall time of an application's own timers with and without whole-test virtual time (issue 43, item 1): the same
coroutines on asyncio's own event loop and on :class:`minibroker.virtual_time.VirtualTimeLoop`. The unit tests
assert only virtual time; the wall-time comparison lives here.

    .venv/bin/python tests/benchmarks/virtual_time_bench.py [--back-off 30]

Cases: ``asyncio.timeout(2)`` around a read that never comes (2 s on a real loop), and three attempts with
``--back-off`` seconds between them (skipped on the real loop beyond 5 s: its figure is the back-off itself).
Target: every virtual case under one second of wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable

from minibroker.virtual_time import VirtualTimeLoop

TARGET_S = 1.0


async def timeout_2s() -> None:
    try:
        async with asyncio.timeout(2):
            await asyncio.Event().wait()
    except TimeoutError:
        pass


def back_off(seconds: float) -> Callable[[], Awaitable[None]]:
    async def attempts() -> None:
        for _ in range(3):
            await asyncio.sleep(seconds)

    return attempts


def wall(case: Callable[[], Awaitable[None]], *, virtual: bool) -> tuple[float, float]:
    """(wall seconds, loop seconds) of one run of ``case``."""
    factory = VirtualTimeLoop if virtual else None
    with asyncio.Runner(loop_factory=factory) as runner:
        loop = runner.get_loop()
        began, loop_began = time.perf_counter(), loop.time()
        runner.run(case())  # type: ignore[arg-type]
        return time.perf_counter() - began, loop.time() - loop_began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--back-off", type=float, default=30.0, help="seconds between the three attempts (30)")
    args = parser.parse_args()
    cases = {"asyncio.timeout(2)": timeout_2s, f"3 x sleep({args.back_off:g})": back_off(args.back_off)}
    failed = False
    print(f"{'case':<22} {'loop':<8} {'loop time':>10} {'wall':>9}")
    for name, case in cases.items():
        for virtual in (False, True):
            if not virtual and name.startswith("3 x") and args.back_off > 5:
                print(f"{name:<22} {'real':<8} {'-':>10} {'-':>9}  (the back-off itself; skipped)")
                continue
            spent, loop_spent = wall(case, virtual=virtual)
            verdict = ""
            if virtual:
                verdict = "PASS" if spent < TARGET_S else "FAIL"
                failed |= spent >= TARGET_S
            kind = "virtual" if virtual else "real"
            print(f"{name:<22} {kind:<8} {loop_spent:>9.3f}s {spent:>8.3f}s  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
