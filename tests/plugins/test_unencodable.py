"""A string UTF-8 cannot encode (a lone surrogate, which an in-process client or a JSON ``\\ud800`` can put in a
message) is written to a subscriber as ActiveMQ's encoder writes it, ``?`` in its place (Java's
``String.getBytes(UTF_8)``), on every edge: the subscriber stays connected and gets the next message too (issue 41,
item 4). Before, the STOMP and native connections were closed and the MQTT delivery failed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.mqtt_helpers import RawMqtt
from support.stomp_helpers import RawStompClient

from minibroker import Broker, ManualClock
from minibroker.client import Connection, connect
from minibroker.plugins.mqtt import start_mqtt_server
from minibroker.plugins.server.tcp import start_server
from minibroker.plugins.stomp import start_stomp_server

TIMEOUT = 5.0
LONE = "a\ud800b"  # a high surrogate with no low one after it


@pytest.fixture
async def broker() -> AsyncIterator[Broker]:
    async with Broker(clock=ManualClock(autojump=True)) as b:
        yield b


async def send_both(conn: Connection, destination: str) -> None:
    """The message no UTF-8 can hold, then a plain one."""
    producer = await (await conn.create_session()).create_producer(destination)
    await producer.send(LONE, properties={"p": "x\udc00", "k\ud800": "v"}, correlation_id="c\ud800")
    await producer.send("next")


def test_java_replaces_each_lone_surrogate_and_joins_pairs() -> None:
    from minibroker._java.utf8 import java_text, java_utf8

    assert java_text(LONE) == "a?b" and java_text("\udc00\ud800") == "??"
    assert java_utf8("\ud83d\ude00") == "\U0001f600".encode()  # two halves Python keeps apart: one character
    assert java_utf8("plain é") == "plain é".encode()


async def test_stomp(broker: Broker) -> None:
    server = await start_stomp_server(broker)
    client = await RawStompClient.open(server.port)
    try:
        await client.request("SUBSCRIBE", {"destination": "/queue/q", "id": "s"})
        async with await connect(broker) as conn:
            await send_both(conn, "q")
        first = await client.message(TIMEOUT)
        assert first.body == b"a?b"
        assert (first.headers["p"], first.headers["k?"], first.headers["correlation-id"]) == ("x?", "v", "c?")
        assert (await client.message(TIMEOUT)).body == b"next"  # still connected
    finally:
        await client.close()
        await server.close()


async def test_native(broker: Broker) -> None:
    server = await start_server(broker, port=0)
    try:
        async with await connect(server.url) as remote, await connect(broker) as local:
            consumer = await (await remote.create_session()).create_consumer("q")
            await send_both(local, "q")
            first = await consumer.receive(timeout=TIMEOUT)
            assert first is not None and first.body == "a?b"
            assert first.properties == {"p": "x?", "k?": "v"} and first.correlation_id == "c?"
            second = await consumer.receive(timeout=TIMEOUT)
            assert second is not None and second.body == "next"
    finally:
        await server.close()


async def test_mqtt(broker: Broker) -> None:
    server = await start_mqtt_server(broker)
    client, _ = await RawMqtt.connect(server.port, "sub")
    try:
        assert await client.subscribe("t/#", 0) == [0]
        async with await connect(broker) as conn:
            await send_both(conn, "topic://t.x\ud800")
        first = await client.next_publish(TIMEOUT)
        assert first is not None and (first["topic"], first["payload"]) == ("t/x?", "a?b")
        second = await client.next_publish(TIMEOUT)
        assert second is not None and second["payload"] == "next"
    finally:
        client.close()
        await server.close()
