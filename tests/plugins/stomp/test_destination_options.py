"""STOMP SUBSCRIBE reads ``?consumer.*`` options in its destination as the native client does (ActiveMQ parses
both the same way)."""

from __future__ import annotations

import pytest
from support.stomp_helpers import RawStompClient

from minibroker import Broker
from minibroker.plugins.stomp import StompServer

pytestmark = pytest.mark.usefixtures("loop_errors")


async def test_subscribe_options_set_the_consumer(server: StompServer, broker: Broker) -> None:
    client = await RawStompClient.open(server.port)
    await client.send("/queue/O", "red", color="red")
    await client.send("/queue/O", "blue", color="blue")
    await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/O?consumer.selector=color%3D'blue'"})
    msg = await client.message()
    assert msg.body == b"blue" and msg.headers["destination"] == "/queue/O"
    assert broker.queue_names() == ["O"]
    await client.close()


async def test_an_unknown_option_refuses_the_subscribe(server: StompServer) -> None:
    client = await RawStompClient.open(server.port)
    reply = await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/O?consumer.bogus=1"})
    assert reply.command == "ERROR"
    assert "consumer options that couldn't be set" in reply.headers["message"]
    await client.close()
