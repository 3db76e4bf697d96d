"""aiomqtt (an asyncio MQTT client) against the ``minibroker_mqtt`` fixture, and the broker's keep-alive check on
virtual time."""

from __future__ import annotations

import asyncio

import aiomqtt
import pytest

from minibroker import ManualClock
from minibroker.client import connect
from minibroker.plugins.pytest_plugin import MqttEndpoint


async def test_publish_subscribe_and_jms_interop(minibroker_mqtt: MqttEndpoint) -> None:
    async with (
        aiomqtt.Client("127.0.0.1", minibroker_mqtt.port, identifier="a") as sub,
        aiomqtt.Client("127.0.0.1", minibroker_mqtt.port, identifier="b") as pub,
    ):
        await sub.subscribe("plant/+/alarm", qos=1)
        await pub.publish("plant/7/alarm", b"hot", qos=1)
        async with await connect(minibroker_mqtt.broker) as conn:
            producer = await (await conn.create_session()).create_producer("topic://plant.8.alarm")
            await producer.send("cold", persistent=False)
        got = []
        async with asyncio.timeout(10):
            async for message in sub.messages:
                got.append((str(message.topic), message.payload, message.qos))
                if len(got) == 2:
                    break
        assert got == [("plant/7/alarm", b"hot", 1), ("plant/8/alarm", b"cold", 1)]


@pytest.mark.minibroker(autojump=False)
async def test_a_silent_client_is_dropped_after_one_and_a_half_keep_alives(
    minibroker_mqtt: MqttEndpoint, manual_clock: ManualClock
) -> None:
    from minibroker.plugins.mqtt.codec import Connect, encode_connect

    reader, writer = await asyncio.open_connection("127.0.0.1", minibroker_mqtt.port)
    writer.write(encode_connect(Connect("MQTT", 4, "quiet", True, 10)))
    assert await asyncio.wait_for(reader.readexactly(4), 5) == b"\x20\x02\x00\x00"
    await manual_clock.advance(14)  # under 1.5 periods: still connected
    assert minibroker_mqtt.server.connection_count == 1
    await manual_clock.advance(2)
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()
