"""The wire corpus's scripts: two written by hand and, mostly, mixed cross-protocol scripts generated from seeds.

A generated script is a small application: two or three *features* (below) share its clients (2 to 13, STOMP 1.0,
1.1 and 1.2 through stomp.py, MQTT 3.1.1 through paho-mqtt, a raw STOMP socket for bad input) and run interleaved,
phase by phase, with a sync point after each round of phases. Every script uses names of its own (destinations, MQTT
and STOMP client ids, durable subscription names start with the script's name) so that many run at once on one
broker, recorded or replayed; the shared ``ActiveMQ.DLQ`` is read with a selector on the script's ``wo`` property.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

Script = dict[str, Any]

SEEDS = (1, 2, 3, 4)
PER_SEED = 110
DESCRIPTION = f"gen.py: basics + mixed scripts, seeds {list(SEEDS)}, {PER_SEED} each"


class Builder:
    """One script under construction: its clients and steps."""

    def __init__(self, name: str, rng: random.Random) -> None:
        self.name = name
        self.rng = rng
        self.clients: dict[str, dict[str, Any]] = {}
        self.steps: list[dict[str, Any]] = []
        self.shared: list[str] = []  # STOMP clients any feature may use (never closed by a feature)
        self.features: list[str] = []

    def add(self, client: str, op: str, **fields: Any) -> None:
        self.steps.append({"c": client, "op": op, **fields})

    def sync(self) -> None:
        if self.steps and self.steps[-1] != {"op": "sync"}:
            self.steps.append({"op": "sync"})

    def _new(self, prefix: str, spec: dict[str, Any]) -> str:
        name = f"{prefix}{sum(1 for c in self.clients if c.startswith(prefix)) + 1}"
        self.clients[name] = spec
        return name

    def stomp(self, version: str | None = None, client_id: str | None = None, connect: bool = True) -> str:
        """A new stomp.py client of its own (connected unless told otherwise)."""
        spec = {"proto": "stomp", "version": version or self.rng.choice(["1.0", "1.1", "1.2", "1.2"])}
        name = self._new("s", spec)
        if connect:
            self.connect_stomp(name, client_id)
        return name

    def connect_stomp(self, name: str, client_id: str | None = None) -> None:
        self.add(name, "connect", **({"headers": {"client-id": client_id}} if client_id else {}))

    def any_stomp(self) -> str:
        """A shared STOMP client: an existing one or a new one."""
        if self.shared and self.rng.random() < 0.7:
            return self.rng.choice(self.shared)
        name = self.stomp()
        self.shared.append(name)
        return name

    def mqtt(self, client_id: str | None = None, clean: bool = True, connect: bool = True) -> str:
        name = self._new("m", {})
        self.clients[name] = {"proto": "mqtt", "client_id": client_id or f"{self.name}-{name}", "clean": clean}
        if connect:
            self.add(name, "connect")
        return name

    def raw(self) -> str:
        return self._new("r", {"proto": "raw"})

    def version(self, name: str) -> str:
        return str(self.clients[name]["version"])

    def script(self) -> Script:
        return {"name": self.name, "features": self.features, "clients": self.clients, "steps": self.steps}


Feature = Callable[[Builder], Iterator[None]]


def props(b: Builder, i: int) -> dict[str, str]:
    return {"n": str(i), "color": b.rng.choice(["red", "blue"])}


# -- the features ----------------------------------------------------------------------------------------------------


def queue_acks(b: Builder) -> Iterator[None]:
    """A queue consumer in one ack mode; acks, NACKs, then a second consumer takes what was left."""
    mode = b.rng.choice(["auto", "client", "client-individual"])
    q = f"/queue/{b.name}-ack"
    c, p = b.stomp(), b.any_stomp()
    b.add(c, "subscribe", dest=q, id="ack", ack=mode)
    n = b.rng.randint(2, 4)
    for i in range(n):
        b.add(p, "send", dest=q, body=f"ack-{i}", headers=props(b, i) | ({"persistent": "true"} if i % 2 else {}))
    yield
    if mode != "auto":
        k = b.rng.randrange(n)
        b.add(c, "ack", msg={"body": f"ack-{k}"})
        if mode == "client-individual" and b.version(c) != "1.0" and b.rng.random() < 0.5:
            b.add(c, "nack", msg={"body": f"ack-{(k + 1) % n}"})
    yield
    if b.rng.random() < 0.5:
        b.add(c, "unsubscribe", id="ack")
    else:
        b.add(c, "disconnect")
    c2 = b.stomp()
    b.add(c2, "subscribe", dest=q, id="rest", ack="auto")
    yield


def prefetch(b: Builder) -> Iterator[None]:
    """``activemq.prefetchSize``: a client-individual consumer with a window of 1 or 2 and a second one beside it."""
    q = f"/queue/{b.name}-pf"
    size = b.rng.choice([1, 2])
    c, p = b.stomp(), b.any_stomp()
    b.add(
        c,
        "subscribe",
        dest=q,
        id="pf",
        ack=b.rng.choice(["client", "client-individual"]),
        headers={"activemq.prefetchSize": size},
    )
    for i in range(3):
        b.add(p, "send", dest=q, body=f"pf-{i}")
    yield
    b.add(c, "ack", msg={"body": "pf-0"})
    yield
    c2 = b.stomp()
    b.add(c2, "subscribe", dest=q, id="pf2", headers={"activemq.prefetchSize": 1})
    b.add(c, "unsubscribe", id="pf")
    yield


def transactions(b: Builder) -> Iterator[None]:
    """BEGIN/COMMIT/ABORT of sends (to a queue and to a topic an MQTT client reads) and of acks."""
    q, t = f"/queue/{b.name}-tx", f"{b.name}/tx"
    p, c = b.any_stomp(), b.stomp()
    m = b.mqtt()
    b.add(m, "subscribe", topic=t, qos=b.rng.choice([0, 1]))
    b.add(c, "subscribe", dest=q, id="tx", ack="client-individual" if b.version(c) != "1.0" else "client")
    b.add(p, "begin", tx="t1")
    b.add(p, "send", dest=q, body="tx-q", tx="t1")
    b.add(p, "send", dest=f"/topic/{b.name}.tx", body="tx-t", tx="t1", text=True)
    yield
    end = b.rng.choice(["commit", "abort"])
    b.add(p, end, tx="t1")
    b.add(p, "send", dest=q, body="tx-after")
    yield
    b.add(c, "begin", tx="t2")
    b.add(c, "ack", msg={"body": "tx-after"}, tx="t2")
    b.add(c, b.rng.choice(["commit", "abort"]), tx="t2")
    yield
    b.add(c, "disconnect")
    c2 = b.stomp()
    b.add(c2, "subscribe", dest=q, id="tx2")
    yield


def selectors(b: Builder) -> Iterator[None]:
    """Selectors on a queue (STOMP properties) and on a topic an MQTT client publishes to (its QoS property)."""
    q = f"/queue/{b.name}-sel"
    c, p = b.stomp(), b.any_stomp()
    b.add(c, "subscribe", dest=q, id="sel", headers={"selector": "color = 'red' AND n > 0"})
    t = b.stomp()
    on_qos = "JMSDeliveryMode = 'PERSISTENT'" if b.rng.random() < 0.8 else "ActiveMQ.MQTT.QoS > 0"
    b.add(t, "subscribe", dest=f"/topic/{b.name}.sel", id="tsel", headers={"selector": on_qos})
    m = b.mqtt()
    yield
    for i in range(4):
        b.add(p, "send", dest=q, body=f"sel-{i}", headers=props(b, i))
    for qos in (0, 1, 2):
        b.add(m, "publish", topic=f"{b.name}/sel", payload=f"msel-{qos}", qos=qos)
    yield
    c2 = b.stomp()
    b.add(c2, "subscribe", dest=q, id="rest", headers={"selector": "color <> 'red' OR n = 0"})
    yield


def browsers(b: Builder) -> Iterator[None]:
    """``browser:true``: every message, then the end-of-browse MESSAGE; a consumer then takes them."""
    q = f"/queue/{b.name}-br"
    p = b.any_stomp()
    for i in range(b.rng.randint(0, 3)):
        b.add(p, "send", dest=q, body=f"br-{i}", headers={"n": str(i)})
    yield
    c = b.stomp()
    headers: dict[str, Any] = {"browser": "true"}
    if b.rng.random() < 0.4:
        headers["selector"] = "n > 0"
    b.add(c, "subscribe", dest=q, id="br", headers=headers)
    yield
    c2 = b.any_stomp()
    b.add(c2, "subscribe", dest=q, id=f"{b.name}-brc")
    yield


def durable(b: Builder) -> Iterator[None]:
    """A durable topic subscription over STOMP: messages while away, reconnect, UNSUBSCRIBE."""
    t = f"{b.name}.dur"
    cid, sub = f"{b.name}-dur", f"{b.name}-sub"
    d = b.stomp(client_id=cid)
    ack = b.rng.choice(["auto", "client"])
    subscribe = {"dest": f"/topic/{t}", "id": "dur", "ack": ack, "headers": {"activemq.subscriptionName": sub}}
    b.add(d, "subscribe", **subscribe)
    via_mqtt = b.rng.random() < 0.5
    pub = b.mqtt() if via_mqtt else b.any_stomp()

    def send(body: str) -> None:
        if via_mqtt:
            b.add(pub, "publish", topic=t.replace(".", "/"), payload=body, qos=1)
        else:
            b.add(pub, "send", dest=f"/topic/{t}", body=body, headers={"persistent": "true"})

    send("dur-0")
    yield
    b.add(d, "disconnect")
    send("dur-1")
    yield
    d2 = b.stomp(client_id=cid)
    b.add(d2, "subscribe", **subscribe)
    yield
    end = b.rng.choice(["open", "closed"])
    if end == "open":  # ActiveMQ: ERROR "Durable consumer is in use", the subscription stays
        b.add(d2, "unsubscribe", id="dur", headers={"activemq.subscriptionName": sub})
    else:
        b.add(d2, "unsubscribe", id="dur")
        b.add(d2, "unsubscribe", id="dur", headers={"activemq.subscriptionName": sub})
    send("dur-2")
    yield


def mqtt_sessions(b: Builder) -> Iterator[None]:
    """A persistent MQTT session (clean session 0): messages from STOMP and MQTT while away, then clean session 1."""
    cid = f"{b.name}-sess"
    m = b.mqtt(client_id=cid, clean=False)
    qos = b.rng.choice([1, 2])
    b.add(m, "subscribe", topic=f"{b.name}/sess", qos=qos)
    s = b.any_stomp()
    yield
    b.add(m, "disconnect")
    b.add(s, "send", dest=f"/topic/{b.name}.sess", body="sess-stomp", headers={"persistent": "true"})
    p = b.mqtt()
    b.add(p, "publish", topic=f"{b.name}/sess", payload="sess-mqtt", qos=b.rng.choice([0, 1, 2]))
    yield
    b.add(m, "connect")
    yield
    b.add(m, "disconnect")
    m2 = b.mqtt(client_id=cid, clean=True)
    b.add(m2, "subscribe", topic=f"{b.name}/sess", qos=1)
    yield


def retained(b: Builder) -> Iterator[None]:
    """Retained MQTT messages: a later subscriber gets the last one, flagged; an empty one clears it."""
    t = f"{b.name}/ret"
    m = b.mqtt()
    b.add(m, "publish", topic=t, payload="ret-1", qos=b.rng.choice([0, 1]), retain=True)
    b.add(m, "publish", topic=t, payload="ret-2", qos=b.rng.choice([0, 1, 2]), retain=True)
    yield
    m2 = b.mqtt()
    b.add(m2, "subscribe", topic=t, qos=b.rng.choice([0, 1, 2]))
    s = b.any_stomp()
    b.add(s, "subscribe", dest=f"/topic/{b.name}.ret", id=f"{b.name}-ret")
    yield
    b.add(m, "publish", topic=t, payload="ret-3", qos=1)
    if b.rng.random() < 0.5:
        b.add(m, "publish", topic=t, payload="", qos=0, retain=True)
    yield
    m3 = b.mqtt()
    b.add(m3, "subscribe", topic=t, qos=1)
    yield


def virtual_topics(b: Builder) -> Iterator[None]:
    """``VirtualTopic.x`` with two consumer queues (STOMP) and an MQTT subscriber on the topic."""
    vt = f"VirtualTopic.{b.name}"
    a, c = b.stomp(), b.stomp()
    b.add(a, "subscribe", dest=f"/queue/Consumer.A.{vt}", id="va")
    b.add(c, "subscribe", dest=f"/queue/Consumer.B.{vt}", id="vb", ack="client")
    m = b.mqtt()
    b.add(m, "subscribe", topic=vt.replace(".", "/"), qos=1)
    yield
    if b.rng.random() < 0.5:
        b.add(m, "publish", topic=vt.replace(".", "/"), payload="vt-1", qos=1)
    else:
        b.add(b.any_stomp(), "send", dest=f"/topic/{vt}", body="vt-1", headers={"color": "red"})
    yield
    b.add(c, "unsubscribe", id="vb")
    b.add(b.any_stomp(), "send", dest=f"/topic/{vt}", body="vt-2")
    yield
    b.add(c, "subscribe", dest=f"/queue/Consumer.B.{vt}", id="vb2")
    yield


def composites(b: Builder) -> Iterator[None]:
    """A composite SEND (two queues, or a queue and a topic an MQTT client reads) and a composite consumer."""
    q1, q2 = f"/queue/{b.name}-c1", f"/queue/{b.name}-c2"
    a = b.stomp()
    b.add(a, "subscribe", dest=q1, id="c1")
    if b.rng.random() < 0.5:
        m = b.mqtt()
        b.add(m, "subscribe", topic=f"{b.name}/ct", qos=1)
        dest = f"{q1},/topic/{b.name}.ct"
    else:
        c = b.stomp()
        b.add(c, "subscribe", dest=q2, id="c2")
        dest = f"{q1},{q2}"
    yield
    b.add(b.any_stomp(), "send", dest=dest, body="comp-1", headers={"persistent": "true"})
    yield
    both = b.stomp()
    b.add(both, "subscribe", dest=f"/queue/{b.name}-c3,/queue/{b.name}-c4", id="cc")
    p = b.any_stomp()
    b.add(p, "send", dest=f"/queue/{b.name}-c4", body="comp-4")
    b.add(p, "send", dest=f"/queue/{b.name}-c3", body="comp-3")
    yield


def temp_destinations(b: Builder) -> Iterator[None]:
    """Request/reply over a temporary queue; a reply after its owner left; a temporary queue that never existed."""
    requester, server = b.stomp(), b.stomp()
    b.add(requester, "subscribe", dest="/temp-queue/replies", id="tq")
    b.add(server, "subscribe", dest=f"/queue/{b.name}-req", id="req")
    b.add(requester, "send", dest=f"/queue/{b.name}-req", body="req-1", headers={"reply-to": "/temp-queue/replies"})
    yield
    b.add(server, "send", dest_from={"body": "req-1", "header": "reply-to"}, body="reply-1")
    yield
    case = b.rng.choice(["owner-left", "never", "temp-topic"])
    if case == "owner-left":
        b.add(requester, "disconnect")
        b.add(server, "send", dest_from={"body": "req-1", "header": "reply-to"}, body="reply-2")
    elif case == "never":
        b.add(server, "send", dest="/remote-temp-queue/ID:never-1:1:1", body="nobody", receipt=b.rng.random() < 0.5)
    else:
        b.add(requester, "subscribe", dest="/temp-topic/news", id="tt")
        b.add(requester, "send", dest="/temp-topic/news", body="news-1")
    yield


def advisories(b: Builder) -> Iterator[None]:
    """Consumer advisories for a queue, read over STOMP (JSON) or MQTT, as consumers come and go."""
    q = f"{b.name}-adv"
    if b.rng.random() < 0.7:
        w = b.stomp()
        b.add(w, "subscribe", dest=f"/topic/ActiveMQ.Advisory.Consumer.Queue.{q}", id="adv")
    else:
        w = b.mqtt()
        b.add(w, "subscribe", topic=f"ActiveMQ/Advisory/Consumer/Queue/{q}", qos=0)
    yield
    c = b.stomp()
    b.add(c, "subscribe", dest=f"/queue/{q}", id="advc")
    yield
    b.add(c, "unsubscribe", id="advc")
    yield


def expiry_dlq(b: Builder) -> Iterator[None]:
    """An expired message and a NACKed one: gone, or in ActiveMQ.DLQ (persistent ones), read with a selector."""
    q = f"/queue/{b.name}-exp"
    p = b.any_stomp()
    persistent = b.rng.choice(["true", "false"])
    mine = {"wo": b.name, "persistent": persistent}
    b.add(p, "send", dest=q, body="exp-1", expires_in=150, headers=mine)
    b.add(p, "send", dest=q, body="exp-2", expires_in=60000, headers=mine)
    nacker = b.stomp(version=b.rng.choice(["1.1", "1.2"]))
    b.add(nacker, "subscribe", dest=f"/queue/{b.name}-nk", id="nk", ack="client-individual")
    b.add(p, "send", dest=f"/queue/{b.name}-nk", body="nk-1", headers={"wo": b.name, "persistent": "true"})
    yield
    b.steps.append({"op": "pause", "ms": 400})
    c = b.stomp()
    b.add(c, "subscribe", dest=q, id="exp")
    yield
    b.add(nacker, "nack", msg={"body": "nk-1"})
    yield
    d = b.stomp()
    b.add(d, "subscribe", dest="/queue/ActiveMQ.DLQ", id="dlq", headers={"selector": f"wo = '{b.name}'"})
    yield


def mqtt_qos(b: Builder) -> Iterator[None]:
    """What QoS an MQTT subscriber gets for STOMP sends (persistent, ``ActiveMQ.MQTT.QoS``) and what headers a
    STOMP subscriber gets for MQTT publishes of each QoS."""
    t = f"{b.name}.qos"
    m = b.mqtt()
    b.add(m, "subscribe", topic=t.replace(".", "/"), qos=b.rng.choice([0, 1, 2]))
    s = b.stomp()
    b.add(s, "subscribe", dest=f"/topic/{t}", id="qos")
    yield
    p = b.any_stomp()
    b.add(p, "send", dest=f"/topic/{t}", body="q-np", headers={"persistent": "false"})
    b.add(p, "send", dest=f"/topic/{t}", body="q-p", headers={"persistent": "true"})
    if b.rng.random() < 0.5:
        b.add(p, "send", dest=f"/topic/{t}", body="q-h", headers={"ActiveMQ.MQTT.QoS": b.rng.choice(["0", "1", "2"])})
    yield
    pub = b.mqtt()
    for qos in b.rng.sample([0, 1, 2], 2):
        b.add(pub, "publish", topic=t.replace(".", "/"), payload=f"mq-{qos}", qos=qos)
        # a sync between the two: on ActiveMQ a QoS 2 delivery's PUBREL races the next PUBLISH to the same
        # subscriber (paho hands the QoS 2 message over at PUBREL), so their order is not the broker's to keep
        yield


BAD_STOMP = [
    ("unknown-command", "FOO\nx:y\n\n\0"),
    ("no-colon-header", "SEND\ndestination /queue/X-bad\n\nbody\0"),
    ("short-content-length", "SEND\ndestination:/queue/X-bad\ncontent-length:2\n\nabcdef\0"),
    ("send-no-destination", "SEND\nreceipt:bad\n\nx\0"),
    ("subscribe-no-destination", "SUBSCRIBE\nid:1\nreceipt:bad\n\n\0"),
    ("ack-unknown", "ACK\nid:nothing\nmessage-id:nothing\nsubscription:0\nreceipt:bad\n\n\0"),
    ("commit-unknown-tx", "COMMIT\ntransaction:nope\nreceipt:bad\n\n\0"),
    ("begin-twice", "BEGIN\ntransaction:t\n\n\0BEGIN\ntransaction:t\nreceipt:bad\n\n\0"),
    ("unsubscribe-unknown", "UNSUBSCRIBE\nid:nope\nreceipt:bad\n\n\0"),
    ("bad-destination", "SEND\ndestination:/foo/X-bad\nreceipt:bad\n\nx\0"),
    ("bad-selector", "SUBSCRIBE\nid:s\ndestination:/queue/X-bad\nselector:a = = 1\nreceipt:bad\n\n\0"),
    ("advisory-send", "SEND\ndestination:/topic/ActiveMQ.Advisory.Consumer.Queue.X-bad\nreceipt:bad\n\nx\0"),
    (
        "id-reuse",
        "SUBSCRIBE\nid:dup\ndestination:/queue/X-a\n\n\0SUBSCRIBE\nid:dup\ndestination:/queue/X-b\nreceipt:bad\n\n\0",
    ),
    ("bad-escape", "SEND\ndestination:/queue/X-bad\nh:a\\tb\nreceipt:bad\n\nx\0"),
    ("bad-ack-mode", "SUBSCRIBE\nid:s\ndestination:/queue/X-bad\nack:sometimes\nreceipt:bad\n\n\0"),
    ("nack-unknown", "NACK\nid:nothing\nmessage-id:nothing\nsubscription:0\nreceipt:bad\n\n\0"),
    ("abort-unknown-tx", "ABORT\ntransaction:nope\nreceipt:bad\n\n\0"),
    ("bad-prefetch", "SUBSCRIBE\nid:s\ndestination:/queue/X-bad\nactivemq.prefetchSize:-5\nreceipt:bad\n\n\0"),
]


def _label(b: Builder, label: str) -> None:
    b.features[b.features.index("bad_input")] = label


def bad_input(b: Builder) -> Iterator[None]:
    """Bad input of one kind on a connection of its own (raw STOMP, or MQTT), beside the script's other work."""
    kind = b.rng.random()
    if kind < 0.75:
        label, frame = b.rng.choice(BAD_STOMP)
        r = b.raw()
        before_connect = b.rng.random() < 0.1
        if not before_connect:
            b.add(r, "connect", version=b.rng.choice([None, "1.0", "1.1", "1.2"]))
        _label(b, f"bad_input:{label}{':before-connect' if before_connect else ''}")
        yield
        b.add(r, "raw", data=frame.replace("X-", f"{b.name}-"), wait="bad" if "receipt:bad" in frame else "ERROR")
        yield
        b.add(
            r,
            "raw",
            data="SEND\ndestination:/queue/X-after\nreceipt:after\n\nstill\0".replace("X-", f"{b.name}-"),
            wait="after",
        )
        yield
    elif kind < 0.85:
        _label(b, "bad_input:connect-version")
        r = b.raw()
        b.add(r, "connect", version=b.rng.choice(["9.9", "1.0,9.9", "2.0"]))
        yield
    elif kind < 0.93:
        _label(b, "bad_input:mqtt-filter")
        m = b.mqtt()
        b.add(m, "subscribe", topic=b.rng.choice([f"{b.name}/#/x", f"{b.name}/a+", f"{b.name}/#x"]), qos=1)
        yield
        b.add(m, "publish", topic=f"{b.name}/after", payload="after", qos=1)
        yield
    else:
        _label(b, "bad_input:mqtt-takeover")
        cid = f"{b.name}-same"
        m1 = b.mqtt(client_id=cid)
        b.add(m1, "subscribe", topic=f"{b.name}/tk", qos=1)
        yield
        m2 = b.mqtt(client_id=cid)
        b.add(m2, "publish", topic=f"{b.name}/tk", payload="tk", qos=1)
        yield


FEATURES: dict[str, Feature] = {
    f.__name__: f
    for f in (
        queue_acks,
        prefetch,
        transactions,
        selectors,
        browsers,
        durable,
        mqtt_sessions,
        retained,
        virtual_topics,
        composites,
        temp_destinations,
        advisories,
        expiry_dlq,
        mqtt_qos,
        bad_input,
    )
}


def mixed(name: str, rng: random.Random) -> Script:
    """Two or three features interleaved, phase by phase, over shared clients."""
    b = Builder(name, rng)
    names = rng.sample(sorted(FEATURES), rng.choice([2, 2, 3]))
    running = []
    for feature in names:
        b.features.append(feature)
        running.append(FEATURES[feature](b))
    while running:
        for gen in list(running):
            try:
                next(gen)
            except StopIteration:
                running.remove(gen)
        b.sync()
    if b.steps and b.steps[-1] == {"op": "sync"}:
        b.steps.pop()  # the end of a script is a sync point anyway
    return b.script()


def basics() -> list[Script]:
    stomp_one: Script = {
        "name": "basic-stomp",
        "features": ["queue_acks", "selectors"],
        "clients": {"a": {"proto": "stomp", "version": "1.2"}, "b": {"proto": "stomp", "version": "1.1"}},
        "steps": [
            {"c": "a", "op": "connect"},
            {"c": "b", "op": "connect"},
            {"c": "a", "op": "subscribe", "dest": "/queue/basic-stomp.q", "id": "s1", "ack": "client-individual"},
            {"c": "b", "op": "send", "dest": "/queue/basic-stomp.q", "body": "one", "headers": {"color": "red"}},
            {"c": "b", "op": "send", "dest": "/queue/basic-stomp.q", "body": "two", "text": True},
            {"op": "sync"},
            {"c": "a", "op": "ack", "msg": 1},
            {"c": "a", "op": "nack", "msg": 0},
            {
                "c": "b",
                "op": "subscribe",
                "dest": "/queue/basic-stomp.q",
                "id": "s2",
                "headers": {"selector": "a = = 1"},
            },
            {"op": "sync"},
            {"c": "a", "op": "disconnect"},
            {"c": "b", "op": "disconnect"},
        ],
    }
    mqtt_one: Script = {
        "name": "basic-mqtt",
        "features": ["retained", "mqtt_qos"],
        "clients": {
            "m": {"proto": "mqtt", "client_id": "basic-mqtt-m", "clean": True},
            "s": {"proto": "stomp", "version": "1.2"},
        },
        "steps": [
            {"c": "m", "op": "connect"},
            {"c": "s", "op": "connect"},
            {"c": "m", "op": "subscribe", "topic": "basic-mqtt/t", "qos": 1},
            {"c": "s", "op": "subscribe", "dest": "/topic/basic-mqtt.t", "id": "t"},
            {"c": "m", "op": "publish", "topic": "basic-mqtt/t", "payload": "from-mqtt", "qos": 1},
            {"op": "sync"},
            {
                "c": "s",
                "op": "send",
                "dest": "/topic/basic-mqtt.t",
                "body": "from-stomp",
                "headers": {"persistent": "true"},
            },
            {"c": "m", "op": "publish", "topic": "basic-mqtt/r", "payload": "kept", "qos": 0, "retain": True},
            {"op": "sync"},
            {"c": "m", "op": "subscribe", "topic": "basic-mqtt/r", "qos": 2},
            {"op": "sync"},
            {"c": "m", "op": "disconnect"},
            {"c": "s", "op": "disconnect"},
        ],
    }
    advisory_beside_composite: Script = {
        # a consumer advisory subscription while a composite consumer exists on another destination
        "name": "basic-advisory-composite",
        "features": ["advisories", "composites"],
        "clients": {"a": {"proto": "stomp", "version": "1.2"}, "w": {"proto": "stomp", "version": "1.1"}},
        "steps": [
            {"c": "a", "op": "connect"},
            {"c": "w", "op": "connect"},
            {
                "c": "a",
                "op": "subscribe",
                "dest": "/queue/basic-advisory-composite.c1,/queue/basic-advisory-composite.c2",
                "id": "cc",
            },
            {"op": "sync"},
            {
                "c": "w",
                "op": "subscribe",
                "dest": "/topic/ActiveMQ.Advisory.Consumer.Queue.basic-advisory-composite.x",
                "id": "adv",
            },
            {"op": "sync"},
            {"c": "a", "op": "subscribe", "dest": "/queue/basic-advisory-composite.x", "id": "x"},
            {"c": "a", "op": "send", "dest": "/queue/basic-advisory-composite.c2", "body": "c2"},
        ],
    }
    return [stomp_one, mqtt_one, advisory_beside_composite]


def all_scripts() -> list[Script]:
    scripts = basics()
    for seed in SEEDS:
        rng = random.Random(seed)
        scripts.extend(mixed(f"w{seed}-{i:03d}", rng) for i in range(PER_SEED))
    return scripts
