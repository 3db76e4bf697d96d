"""Tests of the request/reply pair: replies are matched by correlation id, on the requester's temporary queue."""

from __future__ import annotations

import pytest
from request_reply import REQUESTS, PriceClient, PriceService

from minibroker import Broker
from minibroker.client import Connection, connect
from minibroker.errors import DestinationDoesNotExist, InvalidDestination


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


async def test_the_reply_queue_is_the_clients_own_and_goes_away(
    minibroker: Broker, minibroker_connection: Connection
) -> None:
    """Another connection cannot read a client's temporary reply queue; once deleted, replies to it fail: a producer
    for it is refused, as ActiveMQ's broker refuses it, and so is a send to it."""
    session = await minibroker_connection.create_session()
    reply_queue = await session.create_temporary_queue()
    assert str(reply_queue).startswith("temp-queue://ID:")
    other = await connect(minibroker)
    other_session = await other.create_session()
    with pytest.raises(InvalidDestination, match="Cannot use a Temporary destination from another Connection"):
        await other_session.create_consumer(reply_queue)
    await reply_queue.delete()
    with pytest.raises(DestinationDoesNotExist):
        await other_session.create_producer(reply_queue)
    anyone = await other_session.create_producer()
    with pytest.raises(DestinationDoesNotExist):
        await anyone.send("too late", destination=reply_queue)
    assert minibroker.queue(REQUESTS).size == 0
    await other.close()
