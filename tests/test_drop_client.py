"""Dropping one client by its client id, whatever its protocol (issue 32, item 8): the reconnect logic of a STOMP or
MQTT application can be tested as the native client's fault injection allows."""

from __future__ import annotations

import asyncio

from support.mqtt_helpers import Paho
from support.stomp_helpers import PeerClosed, RawStompClient

from minibroker import Broker, RealClock
from minibroker.client import connect
from minibroker.plugins.mqtt import start_mqtt_server
from minibroker.plugins.stomp import start_stomp_server


async def test_a_stomp_an_mqtt_and_a_native_client_are_dropped_by_client_id() -> None:
    async with Broker(clock=RealClock()) as broker:
        stomp = await start_stomp_server(broker, "127.0.0.1", 0)
        mqtt = await start_mqtt_server(broker, "127.0.0.1", 0)
        try:
            stomp_client = await RawStompClient.open(stomp.port, client_id="stomp-svc")
            mqtt_client = await Paho.connect(mqtt.port, "mqtt-svc")
            native = await connect(broker, client_id="native-svc")
            bystander = await RawStompClient.open(stomp.port, client_id="other")
            assert broker.drop_client("nobody") == 0
            assert broker.drop_client("stomp-svc") == 1
            await stomp_client.wait_closed()
            await stomp_client.close()
            assert broker.drop_client("mqtt-svc") == 1
            await asyncio.wait_for(mqtt_client.disconnected.wait(), 5)
            mqtt_client.client.loop_stop()
            assert broker.drop_client("native-svc") == 1
            assert native.closed  # the link failed under it, as a network failure would
            assert (await bystander.request("SEND", {"destination": "/queue/q"}, "still here")).command == "RECEIPT"
            try:
                await bystander.disconnect()
            except PeerClosed:
                pass
        finally:
            await mqtt.close()
            await stomp.close()
