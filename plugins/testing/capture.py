"""Capture what is published to topics, from any client (native, STOMP, MQTT, Spark), for assertions in tests.

pytest-mqtt's ``capmqtt`` shows what test authors expect; this is the same for every protocol, since every edge
publishes to the broker's one set of topics::

    async def test_the_gateway_reports(minibroker_mqtt, minibroker_capture):
        readings = await minibroker_capture("sensors/#")        # an MQTT filter, or "topic://sensors.>"
        await run_gateway(minibroker_mqtt.url)
        [reading] = await readings.wait(1)
        assert reading.mqtt_topic == "sensors/kitchen" and reading.json() == {"celsius": 21.5}

Advisory topics are left out unless asked for (a ``#`` or ``>`` pattern also matches ``ActiveMQ.Advisory.*``, which
makes pytest-mqtt's own example fail on ActiveMQ too). A capture subscribes like any topic subscriber: it sees what
is published after it starts, and takes nothing from anyone. Queues are not captured (a consumer would take their
messages): browse them instead (``broker.browse_all``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs

from minibroker.message import Body, PropertyValue
from minibroker.plugins.mqtt.naming import from_activemq, to_activemq
from minibroker.testing import _wait_until

if TYPE_CHECKING:
    from minibroker import Broker
    from minibroker.client import Connection, Consumer, ReceivedMessage, Session

__all__ = ["Capture", "Captured", "start_capture"]

ADVISORY_PREFIX = "ActiveMQ.Advisory."
#: the property ActiveMQ's MQTT transport sets on what an MQTT client publishes (plugins/mqtt/session.py)
QOS_PROPERTY = "ActiveMQ.MQTT.QoS"


@attrs.frozen(slots=True)
class Captured:
    """One captured message: its topic (ActiveMQ's name and MQTT's), body and properties, and for what an MQTT client
    published, its retain flag and QoS."""

    topic: str
    body: Body
    properties: dict[str, PropertyValue]
    message_id: str
    #: published with MQTT's retain flag (``ActiveMQ.Retain``): the topic's retained message when it was captured
    #: (the delivered copy loses the property, as on ActiveMQ)
    retain: bool = False

    @property
    def mqtt_topic(self) -> str:
        """The topic as an MQTT client names it (``sensors/kitchen`` for ``sensors.kitchen``)."""
        return from_activemq(self.topic)

    @property
    def text(self) -> str:
        """The body as text (bytes decoded as UTF-8)."""
        body = self.body
        if isinstance(body, bytes):
            return body.decode()
        if isinstance(body, str):
            return body
        raise TypeError(f"the body of {self.message_id} is a {type(body).__name__}, not text or bytes")

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.text)

    @property
    def qos(self) -> int | None:
        """The QoS an MQTT client published it with (``ActiveMQ.MQTT.QoS``); None when another client sent it."""
        value = self.properties.get(QOS_PROPERTY)
        return value if isinstance(value, int) and not isinstance(value, bool) else None


def topic_of(pattern: str) -> str:
    """The ActiveMQ topic pattern of ``pattern``: ``topic://a.>`` as written, an MQTT filter (``a/#``, ``a/+/b``, a
    name with ``/``) mapped as ActiveMQ maps MQTT, any other name as an ActiveMQ topic name."""
    if pattern.startswith("topic://"):
        return pattern[len("topic://") :]
    if pattern.startswith(("queue://", "temp-")):
        raise ValueError(f"a capture reads topics, not {pattern!r} (browse a queue: broker.browse_all)")
    if "/" in pattern or "#" in pattern or "+" in pattern:
        return to_activemq(pattern)
    return pattern


@attrs.define(slots=True, eq=False)
class Capture:
    """Every message published to the topics of one pattern since the capture started, in arrival order."""

    broker: Broker
    pattern: str
    include_advisories: bool
    _connection: Connection
    _session: Session
    _consumer: Consumer
    messages: list[Captured] = attrs.field(factory=list)

    def _on_message(self, msg: ReceivedMessage) -> None:
        topic = msg.destination.name
        if not self.include_advisories and topic.startswith(ADVISORY_PREFIX):
            return
        retained = self.broker.retained_messages().get(topic)
        retain = retained is not None and retained.message_id == msg.message_id
        self.messages.append(Captured(topic, msg.body, dict(msg.properties), msg.message_id, retain))

    async def wait(self, count: int, *, timeout: float = 10.0) -> list[Captured]:
        """The first ``count`` messages, once that many have come (virtual time moves as for
        ``minibroker.testing.wait_for_queue_size``); fails after ``timeout`` seconds with what did come."""
        if not await _wait_until(self.broker, lambda: len(self.messages) >= count, timeout):
            got = [f"{m.topic}: {m.body!r}" for m in self.messages]
            raise AssertionError(f"{len(got)} message(s) on {self.pattern!r}, not {count}, after {timeout} s: {got}")
        return self.messages[:count]

    @property
    def records(self) -> list[Captured]:
        """Every captured message so far, in arrival order (``.topic``, ``.mqtt_topic``, ``.body``, ``.text``,
        ``.json()``, ``.properties``, ``.retain``, ``.qos``, ``.message_id``); ``messages`` is the same list."""
        return self.messages

    @property
    def texts(self) -> list[str]:
        return [m.text for m in self.messages]

    async def publish(self, topic: str, body: str | bytes, **properties: PropertyValue) -> None:
        """Publish to ``topic`` (a pattern's syntax: MQTT or ActiveMQ) and return once the broker has handed it to
        every subscriber there is (this capture among them, when its pattern matches)."""
        name = topic_of(topic)
        before = len(self.messages)
        producer = await self._session.create_producer(f"topic://{name}")
        await producer.send(body, properties=properties or None)
        await producer.close()
        await _wait_until(self.broker, lambda: len(self.messages) > before, 0.0)

    async def close(self) -> None:
        await self._connection.close()


async def start_capture(broker: Broker, pattern: str, *, include_advisories: bool = False) -> Capture:
    """Start capturing what is published to ``pattern`` on the in-process ``broker`` (see the module notes)."""
    from minibroker.client import connect

    name = topic_of(pattern)
    connection = await connect(broker)
    session = await connection.create_session()
    consumer = await session.create_consumer(f"topic://{name}")
    capture = Capture(broker, pattern, include_advisories, connection, session, consumer)
    consumer.set_listener(capture._on_message)
    return capture
