"""``minibroker_capture`` (issue 32, item 8): what any client publishes to a topic pattern, advisories left out, and
a publish helper that returns once the message is delivered; pytest-mqtt's ``capmqtt`` for every protocol."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from support.mqtt_helpers import Paho
from support.stomp_helpers import RawStompClient

from minibroker import Broker
from minibroker.client import connect
from minibroker.plugins.capture import Capture, topic_of
from minibroker.plugins.pytest_plugin import MqttEndpoint, StompEndpoint

Start = Callable[..., Awaitable[Capture]]


async def test_captures_from_mqtt_stomp_and_native_clients(
    minibroker: Broker, minibroker_mqtt: MqttEndpoint, minibroker_stomp: StompEndpoint, minibroker_capture: Start
) -> None:
    readings = await minibroker_capture("sensors/#")
    device = await Paho.connect(minibroker_mqtt.port, "device")
    await device.publish("sensors/kitchen", b'{"celsius": 21.5}', 1)
    stomp = await RawStompClient.open(minibroker_stomp.port)
    await stomp.send("/topic/sensors.hall", "18")
    async with await connect(minibroker) as conn:
        producer = await (await conn.create_session()).create_producer("topic://sensors.attic")
        await producer.send(b"12")
    got = await readings.wait(3)
    assert [(m.mqtt_topic, m.text) for m in got] == [
        ("sensors/kitchen", '{"celsius": 21.5}'),
        ("sensors/hall", "18"),
        ("sensors/attic", "12"),
    ]
    assert got[0].json() == {"celsius": 21.5} and got[0].topic == "sensors.kitchen"
    await device.disconnect()
    await stomp.close()


async def test_advisories_are_left_out_unless_asked_for(minibroker: Broker, minibroker_capture: Start) -> None:
    """pytest-mqtt's README example subscribes to ``#``, which also catches ActiveMQ's advisory topics."""
    everything = await minibroker_capture("#")
    with_advisories = await minibroker_capture(">", include_advisories=True)
    async with await connect(minibroker) as conn:
        session = await conn.create_session()
        await session.create_consumer("orders")  # a consumer advisory and a destination advisory
        await (await session.create_producer("topic://news")).send("hello")
    await everything.wait(1)
    assert [m.topic for m in everything.messages] == ["news"]
    await with_advisories.wait(2)
    assert any(m.topic.startswith("ActiveMQ.Advisory.") for m in with_advisories.messages)


async def test_publish_returns_once_every_subscriber_has_it(
    minibroker_mqtt: MqttEndpoint, minibroker_capture: Start
) -> None:
    capture = await minibroker_capture("alerts/+")
    sub = await Paho.connect(minibroker_mqtt.port, "listener")
    await sub.subscribe("alerts/+", 0)
    await capture.publish("alerts/fire", "evacuate", severity=9)
    assert capture.texts == ["evacuate"] and capture.messages[0].properties["severity"] == 9
    received = await sub.next()
    assert (received.topic, received.payload) == ("alerts/fire", b"evacuate")
    await capture.publish("other/topic", "not captured")  # returns all the same
    assert capture.texts == ["evacuate"]
    await sub.disconnect()


async def test_wait_names_what_came_when_too_little_did(minibroker_capture: Start) -> None:
    capture = await minibroker_capture("topic://orders.>")
    await capture.publish("topic://orders.eu", "one")
    with pytest.raises(AssertionError, match=r"1 message\(s\) on 'topic://orders.>', not 2.*orders.eu: 'one'"):
        await capture.wait(2, timeout=1)


@pytest.mark.parametrize(
    ("pattern", "topic"),
    [
        ("sensors/+/temp", "sensors.*.temp"),
        ("a/#", "a.>"),
        ("topic://a.>", "a.>"),
        ("orders", "orders"),
        ("v1.0/x", "v1/0.x"),
    ],
)
def test_patterns_are_mqtt_filters_or_activemq_topics(pattern: str, topic: str) -> None:
    assert topic_of(pattern) == topic


def test_queues_are_not_captured() -> None:
    with pytest.raises(ValueError, match="browse a queue"):
        topic_of("queue://orders")
