"""MQTT over TLS (``mqtt+ssl://``), and the fixture on real time as well as on virtual time."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from support.mqtt_helpers import Paho

from minibroker import Broker
from minibroker.plugins.mqtt import start_mqtt_server
from minibroker.plugins.pytest_plugin import MqttEndpoint

CERTS = Path(__file__).resolve().parents[2] / "certs"


async def test_mqtt_over_tls() -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERTS / "server.crt", CERTS / "server.key")
    async with Broker() as broker, await start_mqtt_server(broker, ssl=context) as server:
        assert server.url.startswith("mqtt+ssl://")
        client = await Paho.connect(server.port, "secure", tls_ca=str(CERTS / "server.crt"))
        await client.subscribe("s/t", 1)
        await client.publish("s/t", b"over tls", 1)
        assert (await client.next()).payload == b"over tls"
        await client.disconnect()


async def exactly_once(endpoint: MqttEndpoint) -> None:
    client = await Paho.connect(endpoint.port, "either", keepalive=30)
    await client.subscribe("e/#", 2)
    await client.publish("e/x", b"exactly once", 2)
    got = await client.next()
    assert (got.topic, got.payload, got.qos) == ("e/x", b"exactly once", 2)
    await client.disconnect()


async def test_the_fixture_on_virtual_time(minibroker_mqtt: MqttEndpoint) -> None:
    await exactly_once(minibroker_mqtt)


@pytest.mark.minibroker(virtual_time=False)
async def test_the_fixture_on_real_time(minibroker_mqtt: MqttEndpoint) -> None:
    await exactly_once(minibroker_mqtt)
