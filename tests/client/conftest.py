"""Fixtures shared by the client tests: a broker on a ManualClock and a connection to it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import Connection, connect


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def broker(clock: ManualClock) -> AsyncIterator[Broker]:
    async with Broker(clock=clock) as b:
        yield b


@pytest.fixture
async def conn(broker: Broker) -> AsyncIterator[Connection]:
    async with await connect(broker) as c:
        yield c
