"""A socket fuzz of the MQTT listener: 10,000+ mutated and random packets from attacking connections, while a victim
publisher and subscriber (paho-mqtt, QoS 1) go on; the victim loses nothing and sees nothing twice, the broker keeps
serving, and no connection's error reaches another."""

from __future__ import annotations

import asyncio
import logging
import random

import pytest
from support.mqtt_helpers import Paho

from minibroker import Broker
from minibroker.plugins.mqtt import start_mqtt_server
from minibroker.plugins.mqtt.codec import Connect, encode_connect, encode_publish

PACKETS = 10_000
VICTIM_MESSAGES = 100


def valid_packets(rng: random.Random) -> list[bytes]:
    topic = rng.choice(["a/b", "fuzz/#", "x/+/y", "victim/t", "$SYS/x", "é/ü"])
    return [
        encode_publish(
            "fuzz/t",
            bytes(rng.randrange(256) for _ in range(rng.randrange(20))),
            rng.randrange(3),
            rng.random() < 0.2,
            packet_id=rng.randrange(1, 65535),
        ),
        bytes([0x82])
        + bytes([5 + len(topic.encode())])
        + b"\x00\x01"
        + len(topic.encode()).to_bytes(2, "big")
        + topic.encode()
        + bytes([rng.randrange(3)]),
        bytes([0xA2, 5 + len(topic.encode())]) + b"\x00\x02" + len(topic.encode()).to_bytes(2, "big") + topic.encode(),
        bytes([0x40, 2]) + rng.randrange(65536).to_bytes(2, "big"),
        bytes([0x62, 2]) + rng.randrange(65536).to_bytes(2, "big"),
        bytes([0xC0, 0]),
        encode_connect(Connect("MQTT", 4, "again", True, 0)),
    ]


def mutate(rng: random.Random, packet: bytes) -> bytes:
    data = bytearray(packet)
    choice = rng.random()
    if choice < 0.3 and data:
        data[rng.randrange(len(data))] = rng.randrange(256)
    elif choice < 0.45:
        data = data[: rng.randrange(len(data) + 1)]
    elif choice < 0.55:
        data = bytearray(rng.randbytes(rng.randrange(1, 40)))
    return bytes(data)


async def attack(port: int, rng: random.Random, budget: list[int]) -> None:
    while budget[0] > 0:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(encode_connect(Connect("MQTT", rng.choice([3, 4, 4, 4, 5]), f"fuzz{rng.randrange(50)}", True, 0)))
        for _ in range(rng.randrange(1, 60)):
            writer.write(mutate(rng, rng.choice(valid_packets(rng))))
            budget[0] -= 1
        try:
            await writer.drain()
            await asyncio.wait_for(reader.read(65536), 0.05)
        except (OSError, TimeoutError):
            pass
        writer.close()


async def test_fuzzed_packets_harm_no_one(caplog: pytest.LogCaptureFixture) -> None:
    async with Broker() as broker, await start_mqtt_server(broker) as server:
        sub = await Paho.connect(server.port, "victim-sub")
        assert await sub.subscribe("victim/t", 1) == [1]
        pub = await Paho.connect(server.port, "victim-pub")
        budget = [PACKETS]
        attackers = [asyncio.create_task(attack(server.port, random.Random(seed), budget)) for seed in range(4)]
        for i in range(VICTIM_MESSAGES):
            await pub.publish("victim/t", f"m{i}".encode(), 1)
            await asyncio.sleep(0)  # let the attackers in between the victim's publishes
        await asyncio.gather(*attackers)
        got = [(await sub.next()).payload for _ in range(VICTIM_MESSAGES)]
        assert got == [f"m{i}".encode() for i in range(VICTIM_MESSAGES)]
        assert budget[0] <= 0
        fresh = await Paho.connect(server.port, "after")
        await fresh.subscribe("after/t", 1)
        await pub.publish("after/t", b"still serving", 1)
        assert (await fresh.next()).payload == b"still serving"
        for client in (sub, pub, fresh):
            await client.disconnect()
    bugs = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not bugs, [r.getMessage() for r in bugs]  # every bad packet was a protocol error, none a crash
