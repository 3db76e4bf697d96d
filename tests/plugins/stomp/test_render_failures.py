"""A message one STOMP connection cannot write (issue 31, item 4): that connection fails as a transport, as the
exception out of ActiveMQ's ProtocolConverter does; the send that caused the dispatch and every other client go on."""

from __future__ import annotations

import logging

import pytest
from support.stomp_helpers import RawStompClient

from minibroker import Broker
from minibroker._defaults import DEFAULT_MAX_TRANSFORMATION_ENTRIES
from minibroker.client import connect
from minibroker.plugins.stomp import StompServer

BIG_MAP = {f"k{i}": i for i in range(DEFAULT_MAX_TRANSFORMATION_ENTRIES + 1)}


async def test_a_message_no_connection_can_write_fails_only_the_subscriber(
    server: StompServer, broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    subscriber = await RawStompClient.open(server.port)
    reply = await subscriber.request(
        "SUBSCRIBE", {"id": "s1", "destination": "/queue/q", "ack": "client", "transformation": "jms-map-json"}
    )
    assert reply.command == "RECEIPT"
    bystander = await RawStompClient.open(server.port)
    async with await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer("q")
        with caplog.at_level(logging.WARNING, logger="minibroker.stomp"):
            # more entries than a transformation renders (a lone surrogate, once the example, is written as "?")
            await producer.send(BIG_MAP)
            await subscriber.wait_closed()
        assert "cannot write message" in caplog.text and "closing its connection" in caplog.text
        await bystander.send("/queue/other", "still served")  # another client is untouched
        # the message is back in the queue, counted as delivered once (a failed transport), for anyone else
        consumer = await (await conn.create_session()).create_consumer("q")
        msg = await consumer.receive(timeout=5)
        assert msg is not None and msg.body == BIG_MAP and msg.redelivery_counter == 1
    await bystander.close()
    await subscriber.close()
