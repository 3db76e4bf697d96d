"""Fixtures of the transport conformance kit: a broker on a ManualClock and an ``edges`` factory per edge kind.

The edges and the STOMP helpers live in ``tests/support``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from support.edges import EDGES, EdgeFactory
from support.transports import close_servers

from minibroker import Broker, DestinationPolicy, ManualClock

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
