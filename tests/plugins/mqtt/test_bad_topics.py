"""issue 31: a PUBLISH to an empty topic name (or one no destination can have) is the peer's protocol error: the
connection is closed and one line is logged, not a traceback per packet."""

from __future__ import annotations

import asyncio
import logging
import struct

import pytest

from minibroker import Broker, RealClock
from minibroker.plugins.mqtt import start_mqtt_server


def _connect_then_publish(topic: bytes) -> bytes:
    connect = struct.pack("!H", 4) + b"MQTT" + bytes([4, 2]) + struct.pack("!H", 0) + struct.pack("!H", 1) + b"c"
    publish = struct.pack("!H", len(topic)) + topic + b"payload"
    return bytes([0x10, len(connect)]) + connect + bytes([0x30, len(publish)]) + publish


@pytest.mark.parametrize("topic", [b"", b"a\x00b"])
async def test_a_publish_to_a_bad_topic_name_closes_with_one_line(
    topic: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="minibroker.mqtt")
    async with Broker(clock=RealClock()) as broker:
        server = await start_mqtt_server(broker)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(_connect_then_publish(topic))
            assert await asyncio.wait_for(reader.read(), 5) == b"\x20\x02\x00\x00"  # the CONNACK, then EOF
            writer.close()
        finally:
            await server.close()
    lines = [r for r in caplog.records if r.name == "minibroker.mqtt" and "protocol error" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO and lines[0].exc_info is None
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
