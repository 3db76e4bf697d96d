"""The STOMP ``transformation`` header for MapMessages, replayed from recordings/transformations.json (ActiveMQ
5.17.2 with libxstream-java, made by record_transformations.py): each recorded map, sent natively, reaches a STOMP
subscriber that asks jms-map-json, jms-map-xml (or their other names) byte for byte as ActiveMQ wrote it; each
recorded SEND body becomes the MapMessage (or TextMessage) ActiveMQ made of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.stomp_helpers import RawStompClient
from support.typed_values import typed

from minibroker import Broker, ManualClock
from minibroker.client import connect
from minibroker.plugins.stomp import start_stomp_server
from minibroker.typed import java_map_order, java_type

RECORDING = json.loads((Path(__file__).parent / "recordings" / "transformations.json").read_text())


@pytest.mark.parametrize("case", RECORDING["rendered"], ids=lambda c: f"{c['map']}-{c['transformation']}")
async def test_a_native_map_reaches_a_transforming_subscriber_as_activemq_writes_it(case: dict[str, Any]) -> None:
    values = {k: typed(v) for k, v in RECORDING["maps"][case["map"]].items()}
    async with Broker(clock=ManualClock(autojump=True)) as broker, await start_stomp_server(broker, port=0) as server:
        stomp = await RawStompClient.open(server.port)
        await stomp.request(
            "SUBSCRIBE", {"id": "s", "destination": "/queue/Q", "transformation": case["transformation"]}
        )
        async with await connect(broker) as conn:
            await (await (await conn.create_session()).create_producer("Q")).send(values)
        frame = await stomp.message()
        assert frame.headers.get("transformation") == case["header"]
        assert frame.body.decode() == case["body"]
        await stomp.close()


@pytest.mark.parametrize("case", RECORDING["sent"], ids=lambda c: f"{c['transformation']}-{c['body'][:12]}")
async def test_a_transformed_send_makes_the_message_activemq_makes(case: dict[str, Any]) -> None:
    async with (
        Broker(clock=ManualClock(autojump=True)) as broker,
        await start_stomp_server(broker, port=0) as server,
        await connect(broker) as conn,
    ):
        consumer = await (await conn.create_session()).create_consumer("IN")
        stomp = await RawStompClient.open(server.port)
        reply = await stomp.request(
            "SEND", {"destination": "/queue/IN", "transformation": case["transformation"]}, case["body"].encode()
        )
        assert reply.command == case["reply"]
        msg = await consumer.receive(timeout=5)
        assert msg is not None
        jms = case["jms"]
        if jms["class"] == "ActiveMQMapMessage":
            assert not isinstance(msg.body, (str, bytes))
            assert {k: f"{java_type(v)}:{v}" for k, v in msg.body.items()} == jms["map"]
        else:
            assert msg.body == jms["text"]
        await stomp.close()


def test_the_entry_order_is_java_s_hash_map_order() -> None:
    assert java_map_order([f"k{i}" for i in range(14)])[5:9] == ["k5", "k11", "k6", "k10"]
