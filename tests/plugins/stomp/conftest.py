"""Fixtures of the STOMP connector's tests: a broker on a ManualClock with a STOMP listener on port 0.

Every test also fails on anything the event loop's exception handler saw (a callback that raised inside the
listener would otherwise pass unnoticed).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from minibroker import Broker, ManualClock
from minibroker.plugins.stomp import StompServer, start_stomp_server


@pytest_asyncio.fixture
async def loop_errors() -> AsyncIterator[list[dict[str, Any]]]:
    """Exceptions reported to the loop's handler during the test; the test fails if there are any."""
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    yield seen
    loop.set_exception_handler(previous)
    assert not seen, f"the event loop saw errors: {seen}"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest_asyncio.fixture
async def broker(clock: ManualClock, loop_errors: list[dict[str, Any]]) -> AsyncIterator[Broker]:
    async with Broker(clock=clock) as b:
        yield b


@pytest_asyncio.fixture
async def server(broker: Broker) -> AsyncIterator[StompServer]:
    srv = await start_stomp_server(broker)
    try:
        yield srv
    finally:
        await srv.close()


RECORDING_RESULTS: dict[str, int] = {"passed": 0, "failed": 0}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and item.originalname == "test_recording":  # type: ignore[attr-defined]
        RECORDING_RESULTS["passed" if report.passed else "failed"] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if RECORDING_RESULTS["passed"] or RECORDING_RESULTS["failed"]:
        terminalreporter.write_line(
            f"stomp recordings: {RECORDING_RESULTS['passed']} passed, {RECORDING_RESULTS['failed']} failed"
        )
