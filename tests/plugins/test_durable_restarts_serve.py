"""Issue 41, row 1, as users met it: ``minibroker serve --data-dir`` stopped (SIGKILL, or a clean SIGTERM) while a
durable subscriber is connected over the native protocol, STOMP (``activemq.subscriptionName``) or MQTT (clean
session 0, QoS 1); 20 confirmed persistent sends while it is away; the broker stopped again and restarted; the
subscriber comes back and gets all 20, as on ActiveMQ 5.17. Before the fix it got 0 of 20 on every edge."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from support.mqtt_helpers import Paho
from support.servekit import Served, serve
from support.stomp_helpers import RawStompClient

from minibroker.client import AckMode, connect

TOPIC = "orders"
SENDS = [f"m{i}" for i in range(20)]


class Server:
    """``serve`` with its native, STOMP and MQTT ports, restarted on the same data directory."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.served: Served | None = None
        self.stomp_port = self.mqtt_port = 0
        #: what closes the clients left connected when the broker died (after the kill)
        self.left: list[Callable[[], Awaitable[None] | None]] = []

    async def start(self) -> None:
        served = await serve(
            self.tmp_path, "--data-dir", str(self.tmp_path / "data"), "--stomp-port", "0", "--mqtt-port", "0"
        )
        assert served.proc.stdout is not None
        stomp = (await asyncio.wait_for(served.proc.stdout.readline(), 10)).decode().strip()
        mqtt = (await asyncio.wait_for(served.proc.stdout.readline(), 10)).decode().strip()
        self.stomp_port = int(stomp.rsplit(":", 1)[1])
        self.mqtt_port = int(mqtt.rsplit(":", 1)[1])
        self.served = served

    async def stop(self, sig: int) -> None:
        assert self.served is not None
        if sig == signal.SIGKILL:
            await self.served.kill()
        else:
            assert await self.served.stop(sig) == 0
        for close in self.left:
            closing = close()
            if closing is not None:
                await closing
        self.left.clear()


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    srv = Server(tmp_path)
    yield srv
    if srv.served is not None:
        await srv.served.kill()


async def publish(server: Server) -> None:
    assert server.served is not None
    async with await connect(server.served.url) as conn:
        producer = await (await conn.create_session()).create_producer(f"topic://{TOPIC}")
        for body in SENDS:
            await producer.send(body, persistent=True)


# -- one subscriber per edge: subscribe (and stay), then come back and read everything -------------------------------


async def native(server: Server, stay: bool) -> list[str]:
    assert server.served is not None
    conn = await connect(server.served.url, client_id="native")
    session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
    subscriber = await session.create_durable_subscriber(f"topic://{TOPIC}", "sub")
    got: list[str] = []
    if stay:
        server.left.append(conn.close)
    else:
        while (msg := await subscriber.receive(timeout=1)) is not None:
            assert isinstance(msg.body, str)
            got.append(msg.body)
            await msg.acknowledge()
        await conn.close()
    return got


async def stomp(server: Server, stay: bool) -> list[str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.stomp_port)
    client = RawStompClient(reader, writer)
    await client.connect(**{"client-id": "stomp"})
    await client.request(
        "SUBSCRIBE",
        {"destination": f"/topic/{TOPIC}", "id": "1", "ack": "client", "activemq.subscriptionName": "sub"},
    )
    got: list[str] = []
    if stay:
        server.left.append(client.abort)
    else:
        for _ in SENDS:
            frame = await client.message()
            got.append(frame.body.decode())
        client.send_frame("ACK", {"id": frame.headers["ack"]})
        await client.disconnect()
    return got


async def mqtt(server: Server, stay: bool) -> list[str]:
    client = await Paho.connect(server.mqtt_port, "mqtt", clean_session=False)
    if stay:
        await client.subscribe(TOPIC, qos=1)
        server.left.append(client.drop)
        return []
    got = [(await client.next()).payload.decode() for _ in SENDS]
    await client.disconnect()
    return got


SUBSCRIBERS: dict[str, Callable[[Server, bool], Awaitable[list[str]]]] = {
    "native": native,
    "stomp": stomp,
    "mqtt": mqtt,
}


@pytest.mark.parametrize("second_stop", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
@pytest.mark.parametrize("edge", list(SUBSCRIBERS))
async def test_a_subscriber_connected_at_a_kill_gets_every_send_after_the_next_restart_too(
    server: Server, edge: str, second_stop: int
) -> None:
    subscribe = SUBSCRIBERS[edge]
    await server.start()
    await subscribe(server, True)  # connected when the broker dies
    await server.stop(signal.SIGKILL)
    await server.start()
    await publish(server)  # 20 confirmed sends while it is away
    await server.stop(second_stop)
    await server.start()
    assert await subscribe(server, False) == SENDS
