"""``minibroker serve``'s ``[limits]`` reach its STOMP listener (they stopped at the native one before)."""

from __future__ import annotations

from pathlib import Path

from support.stomp_helpers import RawStompClient

from minibroker.plugins.pytest_plugin import start_broker_process


async def test_max_frame_size_bounds_stomp_frames(tmp_path: Path) -> None:
    """``[limits] max_frame_size`` bounds a STOMP frame as it bounds the native and MQTT ones: a SEND over it is an
    ERROR and a closed connection (ActiveMQ's frame size error is fatal), one under it is accepted."""
    config = tmp_path / "broker.toml"
    config.write_text("[limits]\nmax_frame_size = 65536\nmax_transformation_entries = 10\n")
    server = start_broker_process(config, stomp_port=0)
    try:
        assert server.stomp_port is not None
        client = await RawStompClient.open(server.stomp_port)
        await client.send("/queue/small", "x" * 1000)
        too_big = await RawStompClient.open(server.stomp_port)
        too_big.writer.write(b"SEND\ndestination:/queue/big\n\n" + b"x" * 100_000 + b"\x00")
        error = await too_big.error()
        assert "frame" in error.headers["message"].lower()
        await too_big.wait_closed()
        await client.close()
        await too_big.close()
    finally:
        server.stop()
