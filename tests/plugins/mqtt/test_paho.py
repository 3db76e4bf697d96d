"""paho-mqtt against the ``minibroker_mqtt`` fixture: the usage an application has (QoS 0/1/2, wildcards, retained
messages, wills, persistent sessions, credentials), and ActiveMQ's mapping onto topics that JMS-style and STOMP
clients share. Real time for the MQTT client (paho is threaded), the broker on the fixture's virtual clock."""

from __future__ import annotations

import asyncio

import pytest
from support.mqtt_helpers import Paho

from minibroker import Broker
from minibroker.client import connect
from minibroker.plugins.pytest_plugin import MqttEndpoint


async def test_qos_0_1_2_and_the_delivered_qos_is_the_lower_of_the_two(minibroker_mqtt: MqttEndpoint) -> None:
    sub = await Paho.connect(minibroker_mqtt.port, "sub")
    assert await sub.subscribe("sensors/+/temp", 1) == [1]
    pub = await Paho.connect(minibroker_mqtt.port, "pub")
    for qos in (0, 1, 2):
        await pub.publish("sensors/kitchen/temp", f"q{qos}".encode(), qos)
    got = [await sub.next() for _ in range(3)]
    assert [(m.topic, m.payload, m.qos) for m in got] == [
        ("sensors/kitchen/temp", b"q0", 0),
        ("sensors/kitchen/temp", b"q1", 1),
        ("sensors/kitchen/temp", b"q2", 1),
    ]
    await pub.disconnect()
    await sub.disconnect()


async def test_jms_and_mqtt_share_topics_as_activemq_maps_them(minibroker_mqtt: MqttEndpoint) -> None:
    broker = minibroker_mqtt.broker
    sub = await Paho.connect(minibroker_mqtt.port, "sub")
    await sub.subscribe("orders/#", 2)
    async with await connect(broker) as conn:
        session = await conn.create_session()
        jms = await session.create_consumer("topic://orders.>")
        pub = await Paho.connect(minibroker_mqtt.port, "pub")
        await pub.publish("orders/eu/1", b"from mqtt", 1)
        msg = await jms.receive(timeout=5)
        assert msg is not None and msg.body == b"from mqtt" and msg.destination.name == "orders.eu.1"
        assert msg.properties["ActiveMQ.MQTT.QoS"] == 1 and msg.persistent
        # a persistent JMS message goes out at QoS 0, a non-persistent one at QoS 1 (ActiveMQ's converter)
        producer = await session.create_producer("topic://orders.us.2")
        await producer.send("persistent")
        await producer.send("non-persistent", persistent=False)
        got = [await sub.next() for _ in range(3)]
        assert [(m.topic, m.payload, m.qos) for m in got] == [
            ("orders/eu/1", b"from mqtt", 1),
            ("orders/us/2", b"persistent", 0),
            ("orders/us/2", b"non-persistent", 1),
        ]
        await pub.disconnect()
    await sub.disconnect()


async def test_stream_and_object_messages_reach_mqtt_as_activemq_s_body_bytes(minibroker_mqtt: MqttEndpoint) -> None:
    """ActiveMQ's MQTT converter publishes a Stream- or ObjectMessage's body as it holds it: the marshalled stream,
    the serialized object (the bytes below are ActiveMQ 5.17.2's, from tests/plugins/stomp/recordings)."""
    from minibroker.message import ObjectBody
    from minibroker.typed import Short

    sub = await Paho.connect(minibroker_mqtt.port, "sub")
    await sub.subscribe("jobs", 0)
    async with await connect(minibroker_mqtt.broker) as conn:
        producer = await (await conn.create_session()).create_producer("topic://jobs")
        await producer.send(["x", 1, Short(2), b"hi", None])
        await producer.send(ObjectBody.of("hello"))
        got = [await sub.next() for _ in range(2)]
    assert got[0].payload == bytes.fromhex("0900017805000000010400020a00000002686900")
    assert got[1].payload == bytes.fromhex("aced000574000568656c6c6f79")
    await sub.disconnect()


async def test_a_retained_message_reaches_later_subscribers_until_cleared(minibroker_mqtt: MqttEndpoint) -> None:
    pub = await Paho.connect(minibroker_mqtt.port, "pub")
    await pub.publish("config/mode", b"eco", 1, retain=True)
    late = await Paho.connect(minibroker_mqtt.port, "late")
    await late.subscribe("config/#", 1)
    first = await late.next()
    assert (first.topic, first.payload, first.retain) == ("config/mode", b"eco", True)
    await pub.publish("config/mode", b"", 1, retain=True)  # an empty retained message clears it
    cleared = await late.next()
    assert (cleared.payload, cleared.retain) == (b"", False)
    later = await Paho.connect(minibroker_mqtt.port, "later")
    await later.subscribe("config/mode", 1)
    with pytest.raises(TimeoutError):
        await later.next(timeout=0.3)
    for client in (pub, late, later):
        await client.disconnect()


async def test_a_persistent_session_keeps_qos_1_messages_as_a_durable_subscription(
    minibroker_mqtt: MqttEndpoint,
) -> None:
    broker = minibroker_mqtt.broker
    device = await Paho.connect(minibroker_mqtt.port, "device-7", clean_session=False)
    await device.subscribe("commands/#", 1)
    await device.disconnect()
    (durable,) = broker.durable_subscriptions()
    assert (durable.client_id, durable.name, durable.topic, durable.active) == (
        "device-7",
        "AT_LEAST_ONCE:commands/#",
        "commands.>",
        False,
    )
    pub = await Paho.connect(minibroker_mqtt.port, "pub")
    for i in range(3):
        await pub.publish(f"commands/{i}", f"c{i}".encode(), 1)
    assert broker.durable_subscriptions()[0].pending == 3
    device = await Paho.connect(minibroker_mqtt.port, "device-7", clean_session=False)
    assert [(await device.next()).payload for _ in range(3)] == [b"c0", b"c1", b"c2"]
    await device.disconnect()
    clean = await Paho.connect(minibroker_mqtt.port, "device-7", clean_session=True)
    assert broker.durable_subscriptions() == []  # a clean session drops what the persistent one kept
    await clean.disconnect()
    await pub.disconnect()


async def test_the_will_is_published_when_the_connection_is_lost(minibroker_mqtt: MqttEndpoint) -> None:
    watcher = await Paho.connect(minibroker_mqtt.port, "watcher")
    await watcher.subscribe("status/#", 1)
    device = await Paho.connect(minibroker_mqtt.port, "dev", will=("status/dev", b"offline", 1, False))
    polite = await Paho.connect(minibroker_mqtt.port, "polite", will=("status/polite", b"offline", 1, False))
    await polite.disconnect()  # a DISCONNECT: no will
    device.drop()
    will = await watcher.next()
    assert (will.topic, will.payload) == ("status/dev", b"offline")
    with pytest.raises(TimeoutError):
        await watcher.next(timeout=0.3)
    await watcher.disconnect()


async def test_a_second_connection_with_a_client_id_takes_it_over(minibroker_mqtt: MqttEndpoint) -> None:
    first = await Paho.connect(minibroker_mqtt.port, "same")
    second = await Paho.connect(minibroker_mqtt.port, "same")
    assert second.return_code == 0
    await asyncio.wait_for(first.disconnected.wait(), 5)
    first.client.loop_stop()
    await second.disconnect()


async def test_an_empty_client_id_needs_a_clean_session(minibroker_mqtt: MqttEndpoint) -> None:
    anonymous = await Paho.connect(minibroker_mqtt.port, "", clean_session=True)
    assert anonymous.return_code == 0
    await anonymous.disconnect()
    from minibroker.plugins.mqtt.codec import Connect, encode_connect

    reader, writer = await asyncio.open_connection("127.0.0.1", minibroker_mqtt.port)
    writer.write(encode_connect(Connect("MQTT", 4, "", False, 0)))
    assert await asyncio.wait_for(reader.readexactly(4), 5) == b"\x20\x02\x00\x02"  # CONNACK: identifier rejected
    assert await asyncio.wait_for(reader.read(), 5) == b""  # and the connection is closed
    writer.close()


async def test_credentials_go_to_the_broker_s_users() -> None:
    from minibroker.plugins.auth import AuthPlugin, User
    from minibroker.plugins.mqtt import start_mqtt_server

    auth = AuthPlugin({"app": User("secret", frozenset({"apps"}))})
    async with Broker(plugins=[auth]) as broker, await start_mqtt_server(broker) as server:
        bad = await Paho.connect(server.port, "x", username="app", password="wrong")
        assert bad.reason == "Not authorized"  # CONNACK 5
        bad.client.loop_stop()
        good = await Paho.connect(server.port, "y", username="app", password="secret")
        assert good.return_code == 0
        await good.disconnect()


async def test_the_virtual_topic_strategy_keeps_a_persistent_session_in_a_queue() -> None:
    """ActiveMQ's mqtt-virtual-topic-subscriptions: publishes go to VirtualTopic.<topic>, and a persistent QoS 1
    subscription is a consumer on the queue Consumer.<client id>:AT_LEAST_ONCE.VirtualTopic.<topic>."""
    from minibroker.plugins.mqtt import start_mqtt_server

    async with (
        Broker() as broker,
        await start_mqtt_server(broker, subscription_strategy="virtual-topic") as server,
        await connect(broker) as conn,
    ):
        jms = await (await conn.create_session()).create_consumer("topic://VirtualTopic.c.t")
        dev = await Paho.connect(server.port, "dev", clean_session=False)
        assert await dev.subscribe("c/t", 1) == [1]
        await dev.disconnect()
        queue = "Consumer.dev:AT_LEAST_ONCE.VirtualTopic.c.t"
        pub = await Paho.connect(server.port, "pub")
        await pub.publish("c/t", b"kept", 1)
        got = await jms.receive(timeout=5)
        assert got is not None and got.body == b"kept"
        assert broker.queue(queue).size == 1 and broker.durable_subscriptions() == []
        dev = await Paho.connect(server.port, "dev", clean_session=False)
        message = await dev.next()
        assert (message.topic, message.payload, message.qos) == ("c/t", b"kept", 1)
        await dev.disconnect()
        await pub.publish("c/t", b"dropped by a clean session", 1)
        clean = await Paho.connect(server.port, "dev", clean_session=True)
        assert broker.queue(queue).size == 0
        await clean.disconnect()
        await pub.disconnect()
