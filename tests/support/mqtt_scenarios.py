"""MQTT scenarios, written once and run in two worlds: against ActiveMQ 5.17.2's MQTT connector
(``tests/plugins/mqtt/record.py`` records them) and against minibroker's (``tests/plugins/mqtt/test_recordings.py``
replays them and compares the events).

A scenario drives paho-mqtt clients and a JMS-style side (consumers and sends on topics) through a ``World`` and
records what a client could observe: CONNACK and SUBACK codes, the messages each MQTT client gets (topic, payload,
QoS, retain, dup), what the JMS side gets (class, persistence, properties), the broker's durable subscriptions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from support.mqtt_helpers import Paho, RawMqtt

Event = dict[str, Any]
#: how long "nothing more comes" is waited for (real time: the MQTT clients are real)
QUIET = 0.5


class World(Protocol):
    port: int
    events: list[Event]

    async def jms_consumer(self, label: str, topic: str) -> None: ...

    async def jms_receive(self, label: str, timeout: float = 5.0) -> dict[str, Any] | None: ...

    async def jms_send(self, topic: str, body: str, persistent: bool = True) -> None: ...

    async def durable_subs(self) -> list[dict[str, Any]]: ...


async def mqtt(world: World, client_id: str, **kw: Any) -> Paho:
    client = await Paho.connect(world.port, client_id, **kw)
    world.events.append({"event": "connack", "client": client_id, "code": client.reason})
    return client


async def received(world: World, client: Paho, name: str, count: int = 1) -> None:
    for _ in range(count):
        m = await client.next()
        world.events.append(
            {
                "event": "mqtt_received",
                "client": name,
                "topic": m.topic,
                "payload": m.payload.decode(),
                "qos": m.qos,
                "retain": m.retain,
                "dup": m.dup,
            }
        )


async def nothing_more(world: World, client: Paho, name: str) -> None:
    try:
        m = await client.next(timeout=QUIET)
    except TimeoutError:
        world.events.append({"event": "mqtt_none", "client": name})
        return
    world.events.append({"event": "mqtt_unexpected", "client": name, "topic": m.topic, "payload": m.payload.decode()})


async def subscribe(world: World, client: Paho, name: str, topic: str, qos: int) -> None:
    world.events.append(
        {"event": "suback", "client": name, "topic": topic, "granted": await client.subscribe(topic, qos)}
    )


async def jms_received(world: World, label: str) -> None:
    world.events.append({"event": "jms_received", "consumer": label, "message": await world.jms_receive(label)})


async def qos_flows(world: World) -> None:
    """Publishes at QoS 0, 1, 2 to subscriptions at QoS 0, 1, 2: each is delivered at the lower QoS."""
    subs = {}
    for qos in (0, 1, 2):
        subs[qos] = await mqtt(world, f"sub{qos}")
        await subscribe(world, subs[qos], f"sub{qos}", "q/t", qos)
    pub = await mqtt(world, "pub")
    for qos in (0, 1, 2):
        await pub.publish("q/t", f"p{qos}".encode(), qos)
    for qos in (0, 1, 2):
        await received(world, subs[qos], f"sub{qos}", 3)
    for client in (*subs.values(), pub):
        await client.disconnect()


async def jms_interop(world: World) -> None:
    """MQTT and JMS share topics: names map (/ and . trade places), QoS becomes persistence and a property, a JMS
    message's QoS is 0 when persistent and 1 when not."""
    await world.jms_consumer("k", "s.>")
    sub = await mqtt(world, "sub")
    await subscribe(world, sub, "sub", "s/#", 2)
    pub = await mqtt(world, "pub")
    await pub.publish("s/a/b", b"q0", 0)
    await pub.publish("s/a/b", b"q2", 2)
    await pub.publish("s/v1.0", b"dotted", 1)
    for _ in range(3):
        await jms_received(world, "k")
    await received(world, sub, "sub", 3)
    await world.jms_send("s.j", "persistent", True)
    await world.jms_send("s.j", "non-persistent", False)
    await received(world, sub, "sub", 2)
    await sub.disconnect()
    await pub.disconnect()


async def retained(world: World) -> None:
    """A retained message goes first to each new subscription, flagged; an empty one clears it."""
    await world.jms_consumer("k", "r.t")
    pub = await mqtt(world, "pub")
    await pub.publish("r/t", b"kept", 1, retain=True)
    await jms_received(world, "k")
    late = await mqtt(world, "late")
    await subscribe(world, late, "late", "r/#", 1)
    await received(world, late, "late")
    await pub.publish("r/t", b"live", 1)
    await received(world, late, "late")
    await pub.publish("r/t", b"", 1, retain=True)
    await received(world, late, "late")
    later = await mqtt(world, "later")
    await subscribe(world, later, "later", "r/t", 1)
    await nothing_more(world, later, "later")
    for client in (pub, late, later):
        await client.disconnect()


async def persistent_session(world: World) -> None:
    """A persistent session's QoS 1 subscriptions are durable subscriptions named ``<QoS>:<filter>`` (a wildcard one
    too); a QoS 0 one is not; a clean session removes them."""
    dev = await mqtt(world, "dev", clean_session=False)
    await subscribe(world, dev, "dev", "c/t", 1)
    await subscribe(world, dev, "dev", "w/#", 1)
    await subscribe(world, dev, "dev", "z/t", 0)
    await dev.disconnect()
    pub = await mqtt(world, "pub")
    for i in range(2):
        await pub.publish("c/t", f"c{i}".encode(), 1)
    await pub.publish("w/x/y", b"wild", 1)
    await pub.publish("z/t", b"qos0-sub", 1)
    world.events.append({"event": "durable_subs", "subs": await world.durable_subs()})
    dev = await mqtt(world, "dev", clean_session=False)
    await received(world, dev, "dev", 3)
    await nothing_more(world, dev, "dev")
    await dev.disconnect()
    dev = await mqtt(world, "dev", clean_session=True)
    await dev.disconnect()
    world.events.append({"event": "durable_subs", "subs": await world.durable_subs()})
    await pub.disconnect()


async def will(world: World) -> None:
    """The will goes out when the connection is lost, not after DISCONNECT."""
    watcher = await mqtt(world, "watcher")
    await subscribe(world, watcher, "watcher", "status/#", 1)
    polite = await mqtt(world, "polite", will=("status/polite", b"gone", 1, False))
    await polite.disconnect()
    rude = await mqtt(world, "rude", will=("status/rude", b"lost", 1, False))
    rude.drop()
    await received(world, watcher, "watcher")
    await nothing_more(world, watcher, "watcher")
    await watcher.disconnect()


async def client_ids(world: World) -> None:
    """An empty client id needs a clean session; a client id in use is taken over."""
    anonymous = await mqtt(world, "")
    await anonymous.disconnect()
    try:
        refused = await Paho.connect(world.port, "", clean_session=False)
        world.events.append({"event": "connack", "client": "", "clean": False, "code": refused.reason})
        refused.client.loop_stop()
    except ValueError as exc:  # paho itself refuses it
        world.events.append({"event": "client_error", "error": str(exc)})
    first = await mqtt(world, "same")
    second = await mqtt(world, "same")
    import asyncio

    await asyncio.wait_for(first.disconnected.wait(), 5)
    world.events.append({"event": "disconnected", "client": "same (first)"})
    first.client.loop_stop()
    await second.disconnect()


async def raw_connect(port: int, name: bytes, level: int, client_id: bytes) -> str:
    """A CONNECT packet with this protocol name and level, on a raw socket: what came back (a CONNACK's return code,
    or the socket closed without one)."""
    import asyncio
    import struct

    body = struct.pack("!H", len(name)) + name + bytes([level, 0x02]) + struct.pack("!H", 0)
    body += struct.pack("!H", len(client_id)) + client_id
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(bytes([0x10, len(body)]) + body)
        await writer.drain()
        try:
            answer = await asyncio.wait_for(reader.read(4), 5)
        except TimeoutError:
            return "no answer"
        if not answer:
            return "closed without CONNACK"
        return f"CONNACK {answer[3]}" if answer[0] == 0x20 and len(answer) == 4 else f"bytes {answer.hex()}"
    finally:
        writer.close()


async def connect_protocol(world: World) -> None:
    """Paho interop's testBasic: a CONNECT whose protocol is not MQTT 3.1.1 (``MQTT``, level 4) or 3.1 (``MQIsdp``,
    level 3) is answered by closing the socket, without a CONNACK."""
    for i, (name, level) in enumerate(((b"MQTT", 4), (b"MQIsdp", 3), (b"MQTT", 3), (b"hj", 4), (b"MQIsdp", 4))):
        outcome = await raw_connect(world.port, name, level, f"raw{i}".encode())
        world.events.append({"event": "raw_connect", "name": name.decode(), "level": level, "outcome": outcome})


async def dollar_topics(world: World) -> None:
    """Paho interop's test_dollar_topics: a PUBLISH to a topic starting with ``$`` is acknowledged and dropped
    (ActiveMQ's publishDollarTopics is off by default), so neither an exact nor a wildcard subscriber gets it."""
    sub = await mqtt(world, "dollar-sub")
    await subscribe(world, sub, "dollar-sub", "$sys/t", 1)
    await subscribe(world, sub, "dollar-sub", "+/t", 1)
    pub = await mqtt(world, "dollar-pub")
    await pub.publish("$sys/t", b"dollar", 1)
    world.events.append({"event": "published", "topic": "$sys/t"})
    await pub.publish("plain/t", b"plain", 1)
    await received(world, sub, "dollar-sub")
    await nothing_more(world, sub, "dollar-sub")
    for client in (sub, pub):
        await client.disconnect()


async def all_received(world: World, client: Paho, name: str) -> None:
    """Every message that comes until the client has been quiet a while, as one event in a stable order (where
    the broker's threads pick the order)."""
    got = []
    while True:
        try:
            m = await client.next(timeout=QUIET * 2)
        except TimeoutError:
            break
        got.append({"topic": m.topic, "payload": m.payload.decode(), "qos": m.qos, "retain": m.retain, "dup": m.dup})
    got.sort(key=lambda m: (m["topic"], m["payload"], m["qos"]))
    world.events.append({"event": "mqtt_received_all", "client": name, "messages": got})


async def overlapping_subscriptions(world: World) -> None:
    """Paho interop's test_overlapping_subscriptions: two of a client's filters match one topic."""
    sub = await mqtt(world, "ov-sub")
    await subscribe(world, sub, "ov-sub", "ov/#", 2)
    await subscribe(world, sub, "ov-sub", "ov/+", 1)
    pub = await mqtt(world, "ov-pub")
    await pub.publish("ov/t", b"overlap", 2)
    await all_received(world, sub, "ov-sub")
    for client in (sub, pub):
        await client.disconnect()


async def unsubscribe(world: World) -> None:
    """Paho interop's test_unsubscribe: after UNSUBSCRIBE a filter gets nothing; the others go on; unsubscribing a
    filter never subscribed is acknowledged too."""
    sub = await mqtt(world, "un-sub")
    await subscribe(world, sub, "un-sub", "un/a", 1)
    await subscribe(world, sub, "un-sub", "un/b", 1)
    await subscribe(world, sub, "un-sub", "un/c/#", 1)
    for topic_filter in ("un/a", "un/never", "un/c/#"):
        await sub.unsubscribe(topic_filter)
        world.events.append({"event": "unsuback", "client": "un-sub", "topic": topic_filter})
    pub = await mqtt(world, "un-pub")
    for topic in ("un/a", "un/b", "un/c/d"):
        await pub.publish(topic, topic.encode(), 1)
    await received(world, sub, "un-sub")
    await nothing_more(world, sub, "un-sub")
    for client in (sub, pub):
        await client.disconnect()


async def subscribe_failure(world: World) -> None:
    """Paho interop's test_subscribe_failure, with filters MQTT 3.1.1 calls malformed (a ``#`` not last, a wildcard
    inside a level): what the broker answers, each on a fresh connection."""
    for i, topic_filter in enumerate(("sf/#/x", "sf/a#", "sf/+x", "sf/ok/#")):
        client, _ = await RawMqtt.connect(world.port, f"sf{i}")
        outcome = await client.subscribe(topic_filter, 1)
        world.events.append({"event": "raw_suback", "topic": topic_filter, "outcome": outcome})
        client.close()


async def keepalive(world: World) -> None:
    """Paho interop's test_keepalive: a client silent for more than one and a half keep-alive periods is cut off,
    and its will goes out."""
    watcher = await mqtt(world, "ka-watch")
    await subscribe(world, watcher, "ka-watch", "ka/#", 1)
    silent, connack = await RawMqtt.connect(world.port, "ka-silent", keepalive=1, will=("ka/will", b"timed out", 1))
    world.events.append({"event": "raw_connack", "client": "ka-silent", **connack})
    await received(world, watcher, "ka-watch")
    world.events.append({"event": "closed", "client": "ka-silent", "closed": await silent.read_packet(5) is None})
    silent.close()
    await watcher.disconnect()


async def redelivery_on_reconnect(world: World) -> None:
    """Paho interop's test_redelivery_on_reconnect: a QoS 1 message delivered to a persistent session and never
    acknowledged comes again after the client reconnects; CONNACK says whether the broker kept the session."""
    first, connack = await RawMqtt.connect(world.port, "rr", clean_session=False)
    world.events.append({"event": "raw_connack", "client": "rr", "round": 1, **connack})
    world.events.append({"event": "raw_suback", "topic": "rr/t", "outcome": await first.subscribe("rr/t", 1)})
    pub = await mqtt(world, "rr-pub")
    await pub.publish("rr/t", b"unacked", 1)
    world.events.append({"event": "raw_received", "round": 1, "message": await first.next_publish()})
    first.close()
    again, connack = await RawMqtt.connect(world.port, "rr", clean_session=False)
    world.events.append({"event": "raw_connack", "client": "rr", "round": 2, **connack})
    world.events.append({"event": "raw_received", "round": 2, "message": await again.next_publish()})
    again.close()
    clean, connack = await RawMqtt.connect(world.port, "rr", clean_session=True)
    world.events.append({"event": "raw_connack", "client": "rr", "round": 3, **connack})
    clean.close()
    await pub.disconnect()


SCENARIOS: dict[str, Callable[[World], Awaitable[None]]] = {
    "overlapping_subscriptions": overlapping_subscriptions,
    "unsubscribe": unsubscribe,
    "subscribe_failure": subscribe_failure,
    "keepalive": keepalive,
    "redelivery_on_reconnect": redelivery_on_reconnect,
    "connect_protocol": connect_protocol,
    "dollar_topics": dollar_topics,
    "qos_flows": qos_flows,
    "jms_interop": jms_interop,
    "retained": retained,
    "persistent_session": persistent_session,
    "will": will,
    "client_ids": client_ids,
}
