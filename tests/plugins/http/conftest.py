"""The HTTP listener's fixture: a broker without users and its listener on a free port."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from minibroker import Broker
from minibroker.plugins.http import HttpServer, start_http_server


@pytest_asyncio.fixture
async def http() -> AsyncIterator[tuple[Broker, HttpServer]]:
    """A broker without users and its HTTP listener."""
    async with Broker() as broker:
        server = await start_http_server(broker)
        async with server:
            yield broker, server
