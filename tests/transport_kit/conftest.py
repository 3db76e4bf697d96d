"""Fixtures of the transport conformance kit: a broker on a ManualClock and an ``edges`` factory per edge kind.

The STOMP helpers live in ``tests/stomp``; this directory and that one go on ``sys.path`` as ``tests/support``
does for the rest of the suite.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent / "stomp"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from edges import EDGES, EdgeFactory  # noqa: E402
from transports import close_servers  # type: ignore[import-not-found]  # noqa: E402

from minibroker import Broker, DestinationPolicy, ManualClock  # noqa: E402

#: the queues whose memory limit is one byte: one message fills them (then producer flow control)
FLOW_POLICIES = {
    "waiting.>": DestinationPolicy(memory_limit=1),
    "timing.>": DestinationPolicy(memory_limit=1, send_fail_if_no_space_after_timeout=30.0),
    "failing.>": DestinationPolicy(memory_limit=1, send_fail_if_no_space=True),
}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest_asyncio.fixture
async def broker(clock: ManualClock) -> AsyncIterator[Broker]:
    async with Broker(clock=clock, policies=FLOW_POLICIES) as b:
        yield b


@pytest_asyncio.fixture(params=EDGES)
async def edges(request: pytest.FixtureRequest, broker: Broker) -> AsyncIterator[EdgeFactory]:
    factory = EdgeFactory(request.param, broker)
    try:
        yield factory
    finally:
        await factory.close()
        await close_servers()
