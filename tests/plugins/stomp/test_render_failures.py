"""A message one STOMP connection cannot write (issue 31, item 4): that connection fails as a transport, as the
exception out of ActiveMQ's ProtocolConverter does; the send that caused the dispatch and every other client go on."""

from __future__ import annotations

import logging

import pytest
from support.stomp_helpers import RawStompClient

from minibroker import Broker
from minibroker.client import connect
from minibroker.plugins.stomp import StompServer


async def test_a_message_no_connection_can_write_fails_only_the_subscriber(
    server: StompServer, broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    subscriber = await RawStompClient.open(server.port)
    reply = await subscriber.request("SUBSCRIBE", {"id": "s1", "destination": "/queue/q", "ack": "client"})
    assert reply.command == "RECEIPT"
    bystander = await RawStompClient.open(server.port)
    async with await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer("q")
        with caplog.at_level(logging.WARNING, logger="minibroker.stomp"):
            await producer.send("a lone surrogate: \ud800")  # no UTF-8 for it: the STOMP frame cannot be written
            await subscriber.wait_closed()
        assert "cannot write message" in caplog.text and "closing its connection" in caplog.text
        await bystander.send("/queue/other", "still served")  # another client is untouched
        # the message is back in the queue, counted as delivered once (a failed transport), for anyone else
        consumer = await (await conn.create_session()).create_consumer("q")
        msg = await consumer.receive(timeout=5)
        assert msg is not None and msg.body == "a lone surrogate: \ud800" and msg.redelivery_counter == 1
    await bystander.close()
    await subscriber.close()
