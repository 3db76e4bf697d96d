"""The transports' tests share a real-clock broker and a native TCP listener on it (port 0, closed after the test)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from minibroker import Broker, RealClock
from minibroker.plugins.server.tcp import Server, start_server

TIMEOUT = 5.0


@pytest.fixture
async def broker() -> AsyncIterator[Broker]:
    async with Broker(clock=RealClock()) as b:
        yield b


@pytest.fixture
async def server(broker: Broker) -> AsyncIterator[Server]:
    s = await start_server(broker, port=0)
    try:
        yield s
    finally:
        await asyncio.wait_for(s.close(), TIMEOUT)
