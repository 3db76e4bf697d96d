"""``minibroker serve --mqtt-port``: the URL is printed, and a persistent session's messages survive a SIGKILL of a
broker with ``--data-dir`` (its durable subscription is in the store)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from support.mqtt_helpers import Paho

from minibroker.plugins.pytest_plugin import start_broker_process


async def test_a_persistent_session_survives_a_sigkill(tmp_path: Path) -> None:
    server = start_broker_process(data_dir=tmp_path, stomp_port=None, mqtt_port=0)
    try:
        assert server.mqtt_url is not None and server.mqtt_url.startswith("mqtt://127.0.0.1:")
        assert server.mqtt_port is not None
        device = await Paho.connect(server.mqtt_port, "meter-1", clean_session=False)
        await device.subscribe("meters/1/#", 1)
        await device.disconnect()
        pub = await Paho.connect(server.mqtt_port, "pub")
        for i in range(5):
            await pub.publish("meters/1/reading", f"r{i}".encode(), 1)
        await pub.disconnect()
        assert server.process is not None
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
    finally:
        server.stop()
    again = start_broker_process(data_dir=tmp_path, stomp_port=None, mqtt_port=0)
    try:
        assert again.mqtt_port is not None
        device = await Paho.connect(again.mqtt_port, "meter-1", clean_session=False)
        assert [(await device.next()).payload for _ in range(5)] == [f"r{i}".encode() for i in range(5)]
        await device.disconnect()
    finally:
        again.stop()


async def test_max_frame_size_bounds_mqtt_packets(tmp_path: Path) -> None:
    """issue 31: ``[limits] max_frame_size`` applies to every protocol: a PUBLISH over it closes the MQTT connection,
    one under it is delivered (before, a 20 MiB PUBLISH passed a 1 MiB limit)."""
    config = tmp_path / "broker.toml"
    config.write_text("[limits]\nmax_frame_size = 65536\n")
    server = start_broker_process(config, stomp_port=None, mqtt_port=0)
    try:
        assert server.mqtt_port is not None
        sub = await Paho.connect(server.mqtt_port, "sub")
        await sub.subscribe("big/t", 1)
        pub = await Paho.connect(server.mqtt_port, "pub")
        await pub.publish("big/t", b"x" * 1000, 1)
        assert (await sub.next()).payload == b"x" * 1000
        pub.client.publish("big/t", b"x" * 100_000, 1)  # over the limit: the broker closes the connection
        await asyncio.wait_for(pub.disconnected.wait(), 10)
        await sub.disconnect()
    finally:
        server.stop()
