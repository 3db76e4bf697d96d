"""ActiveMQ's ``publishDollarTopics`` (issue 30, item 7): off by default, a PUBLISH to a ``$`` topic is acknowledged
and dropped (recorded: ``recordings/dollar_topics.json``); on, it is delivered like any other."""

from __future__ import annotations

from support.mqtt_helpers import Paho

from minibroker import Broker, RealClock
from minibroker.plugins.mqtt import start_mqtt_server


async def test_with_publish_dollar_topics_a_dollar_topic_is_delivered() -> None:
    async with Broker(clock=RealClock()) as broker:
        server = await start_mqtt_server(broker, publish_dollar_topics=True)
        try:
            sub = await Paho.connect(server.port, "sub")
            assert await sub.subscribe("$sys/t", 1) == [1]
            pub = await Paho.connect(server.port, "pub")
            await pub.publish("$sys/t", b"dollar", 1)
            got = await sub.next()
            assert (got.topic, got.payload) == ("$sys/t", b"dollar")
            for client in (sub, pub):
                await client.disconnect()
        finally:
            await server.close()
