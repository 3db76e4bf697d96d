"""Tests of the request/reply pair: replies are matched by correlation id, on the requester's own queue."""

from __future__ import annotations

import pytest
from request_reply import PriceClient, PriceService

from minibroker import Broker
from minibroker.client import Connection, connect


async def test_each_request_gets_its_own_answer(minibroker: Broker, minibroker_connection: Connection) -> None:
    """Two clients ask at once; each gets the answer to its own question."""
    await PriceService(minibroker_connection).start()
    other = await connect(minibroker)
    first, second = PriceClient(minibroker_connection), PriceClient(other)
    assert await first.quote("apple") == 120
    assert await second.quote("pear") == 95
    assert await first.quote("kiwi") is None
    await other.close()


async def test_no_service_means_a_timeout(minibroker_connection: Connection) -> None:
    """Without the service, the client gives up after its timeout (virtual time: at once)."""
    with pytest.raises(TimeoutError):
        await PriceClient(minibroker_connection).quote("apple", timeout=3)
