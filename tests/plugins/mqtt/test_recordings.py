"""Replays the MQTT scenarios recorded on ActiveMQ 5.17.2's MQTT connector (recordings/, made by record.py from
support/mqtt_scenarios.py) against minibroker's, and compares the events.

The JMS side is minibroker's own client on the same broker. Across two subscriptions of one client the order of
deliveries is the broker's choice (ActiveMQ takes a persistent session's durable subscriptions up in its own order),
so each run of one client's deliveries is compared sorted by topic; one topic's deliveries keep their order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.mqtt_scenarios import SCENARIOS, Event

from minibroker import Broker
from minibroker.client import Connection, Consumer, connect
from minibroker.message import Destination, Message
from minibroker.plugins.mqtt import start_mqtt_server
from minibroker.typed import java_type

RECORDINGS = Path(__file__).parent / "recordings"


class MinibrokerWorld:
    def __init__(self, broker: Broker, port: int, conn: Connection) -> None:
        self.broker = broker
        self.port = port
        self.conn = conn
        self.events: list[Event] = []
        self.consumers: dict[str, Consumer] = {}

    async def jms_consumer(self, label: str, topic: str) -> None:
        session = await self.conn.create_session()
        self.consumers[label] = await session.create_consumer(Destination.topic(topic))

    async def jms_receive(self, label: str, timeout: float = 5.0) -> dict[str, Any] | None:
        msg = await self.consumers[label].receive(timeout=timeout)
        return None if msg is None else describe(msg.message)

    async def jms_send(self, topic: str, body: str, persistent: bool = True) -> None:
        producer = await (await self.conn.create_session()).create_producer(Destination.topic(topic))
        await producer.send(body, persistent=persistent)

    async def durable_subs(self) -> list[dict[str, Any]]:
        return [
            {"active": d.active, "clientId": d.client_id, "name": d.name}
            for d in sorted(self.broker.durable_subscriptions(), key=lambda d: (d.client_id, d.name))
        ]


def describe(message: Message) -> dict[str, Any]:
    body = message.body
    return {
        "body": body if isinstance(body, str) else bytes(body).decode(),  # type: ignore[arg-type]
        "class": "ActiveMQTextMessage" if isinstance(body, str) else "ActiveMQBytesMessage",
        "destination": str(message.destination),
        "persistent": message.persistent,
        "properties": {
            k: f"{java_type(v)}:{str(v).lower() if isinstance(v, bool) else v}"
            for k, v in sorted(message.properties.items())
        },
    }


def canonical(events: list[Event]) -> list[Event]:
    out: list[Event] = []
    run: list[Event] = []
    for e in [*events, {"event": "end"}]:
        if e["event"] == "mqtt_received" and (not run or run[0]["client"] == e["client"]):
            run.append(e)
            continue
        out.extend(sorted(run, key=lambda r: r["topic"]))
        run = [e] if e["event"] == "mqtt_received" else []
        if e["event"] not in ("mqtt_received", "end"):
            out.append(e)
    return out


@pytest.mark.parametrize("name", sorted(p.stem for p in RECORDINGS.glob("*.json")))
async def test_replay(name: str) -> None:
    recording = json.loads((RECORDINGS / f"{name}.json").read_text())
    async with Broker() as broker, await start_mqtt_server(broker) as server, await connect(broker) as conn:
        world = MinibrokerWorld(broker, server.port, conn)
        await SCENARIOS[name](world)
    assert canonical(world.events) == canonical(recording["events"]), "\n".join(json.dumps(e) for e in world.events)


def test_every_scenario_is_recorded() -> None:
    assert {p.stem for p in RECORDINGS.glob("*.json")} == set(SCENARIOS)
