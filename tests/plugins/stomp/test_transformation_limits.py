"""Bounded transformations (issue 31, item 4): a map over ``max_transformation_entries`` (or a rendering over
``max_frame_size``) is not rendered for a subscriber, whose connection fails as for any rendering that fails; a SEND
over it, or nested deeper than Python parses, makes ActiveMQ's failed-transformation TextMessage; the producer and
every other client go on."""

from __future__ import annotations

import pytest
from support.stomp_helpers import RawStompClient

from minibroker import Broker, Destination, ManualClock
from minibroker.client import connect
from minibroker.message import Message
from minibroker.plugins.stomp import start_stomp_server
from minibroker.plugins.stomp.transformations import TransformationLimitExceeded, transformed


def a_map(entries: int) -> Message:
    return Message("ID:m", Destination.queue("q"), {f"k{i}": i for i in range(entries)})


def test_a_map_over_the_entry_limit_is_not_rendered() -> None:
    assert "k2" in str(transformed(a_map(3), "jms-map-json", max_entries=3).body)
    with pytest.raises(TransformationLimitExceeded, match=r"4 entries.*max_transformation_entries 3"):
        transformed(a_map(4), "jms-map-json", max_entries=3)


def test_a_rendering_over_the_frame_size_is_refused() -> None:
    with pytest.raises(TransformationLimitExceeded, match="max_frame_size 100"):
        transformed(a_map(50), "jms-map-xml", max_size=100)


async def test_a_subscriber_s_connection_fails_and_the_message_goes_to_another() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        server = await start_stomp_server(broker, max_transformation_entries=10)
        try:
            subscriber = await RawStompClient.open(server.port)
            reply = await subscriber.request(
                "SUBSCRIBE", {"id": "s1", "destination": "/queue/q", "ack": "client", "transformation": "jms-map-json"}
            )
            assert reply.command == "RECEIPT"
            async with await connect(broker) as conn:
                producer = await (await conn.create_session()).create_producer("q")
                await producer.send({f"k{i}": i for i in range(11)})  # the send itself succeeds
                await subscriber.wait_closed()
                consumer = await (await conn.create_session()).create_consumer("q")
                msg = await consumer.receive(timeout=5)
                assert msg is not None and len(msg.body) == 11 and msg.redelivery_counter == 1
            await subscriber.close()
        finally:
            await server.close()


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ('{"map":{"entry":[' + ",".join(f'{{"string":["k{i}","v"]}}' for i in range(11)) + "]}}", "max_transformation"),
        ('{"map":' + "[" * 5000 + "]" * 5000 + "}", ""),
    ],
    ids=["too-many-entries", "too-deep"],
)
async def test_a_send_over_the_limits_makes_a_failed_transformation_text_message(body: str, why: str) -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        server = await start_stomp_server(broker, max_transformation_entries=10)
        try:
            client = await RawStompClient.open(server.port)
            reply = await client.request(
                "SEND", {"destination": "/queue/maps", "transformation": "jms-map-json"}, body.encode()
            )  # no content-length: a transformation applies (ActiveMQ)
            assert reply.command == "RECEIPT"
            async with await connect(broker) as conn:
                consumer = await (await conn.create_session()).create_consumer("maps")
                msg = await consumer.receive(timeout=5)
            assert msg is not None and isinstance(msg.body, str)
            assert why in str(msg.properties["transformation-error"])
            await client.close()
        finally:
            await server.close()
