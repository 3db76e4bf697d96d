"""One MQTT connection's protocol, sans I/O: packets in, driver operations and bytes out (ActiveMQ's
``MQTTProtocolConverter`` with its default subscription strategy).

ActiveMQ's mapping, as this session does it:

* CONNECT opens a broker connection with the MQTT client id (an empty one takes a generated id, and needs a clean
  session); a second connection with a client id in use takes it over (ActiveMQ's MQTT ``allowLinkStealing``).
  Credentials go to the broker's security filter; a refusal is CONNACK 5 (not authorized).
* PUBLISH becomes a BytesMessage on the ActiveMQ topic (``/`` -> ``.``, see naming.py), persistent unless QoS 0,
  with ``ActiveMQ.MQTT.QoS`` and, with the retain flag, ``ActiveMQ.Retain``; QoS 1 is answered with PUBACK, QoS 2
  with PUBREC then PUBCOMP, also when the broker refused the message (ActiveMQ logs and acks).
* SUBSCRIBE is a retroactive topic subscription (retained messages first); with a persistent session (clean session
  false) and QoS 1 or 2 a durable subscription named ``<QoS>:<filter>`` (``AT_LEAST_ONCE:sensors/#``) of the client
  id, which the next persistent session of that client id takes up again and a clean one removes.
* A delivered message's QoS is its ``ActiveMQ.MQTT.QoS`` (a JMS message: 0 when persistent, 1 when not, as
  ActiveMQ's converter has it) capped by the subscription's; QoS 0 is acked to the broker when written, QoS 1 on
  PUBACK, QoS 2 on PUBCOMP. A redelivered message has the DUP flag.
* A will is published when the connection is lost without DISCONNECT; every protocol error closes the connection.

With ActiveMQ's ``mqtt-virtual-topic-subscriptions`` strategy (``subscription_strategy="virtual-topic"``) publishes go
to ``VirtualTopic.<topic>``, subscriptions read that topic, and a persistent session's QoS 1/2 subscription is a
consumer on the queue ``Consumer.<client id>:<QoS>.VirtualTopic.<topic>`` (fed by the broker's virtual topics)
instead of a durable subscription; a clean session purges those queues.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections import deque
from collections.abc import Callable

import attrs

from minibroker import AckType, Admission, Broker, BrokerConnection, ConsumerInfo, Dispatch, MessageAck
from minibroker._ids import PROCESS_ID_PREFIX
from minibroker._java.bodies import marshal_stream
from minibroker._java.utf8 import java_utf8
from minibroker.errors import (
    AccessDenied,
    ConnectionClosed,
    InvalidClientIdError,
    InvalidDestination,
    MinibrokerError,
    RemoteProtocolError,
)
from minibroker.message import Body, Destination, DestinationKind, Message, ObjectBody
from minibroker.transport import commands as c
from minibroker.typed import java_map_order

from .codec import (
    Connect,
    Disconnect,
    Packet,
    PingReq,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    Subscribe,
    Unsubscribe,
    encode_connack,
    encode_pingresp,
    encode_puback,
    encode_pubcomp,
    encode_publish_to,
    encode_pubrec,
    encode_pubrel,
    encode_suback,
    encode_topic,
    encode_unsuback,
)
from .naming import from_activemq, has_wildcard, to_activemq, validate_filter

__all__ = ["QOS_PROPERTY", "MqttSession"]

log = logging.getLogger("minibroker.mqtt")

#: the property ActiveMQ stamps on a message from MQTT with its QoS
QOS_PROPERTY = "ActiveMQ.MQTT.QoS"
RETAIN_PROPERTY = "ActiveMQ.Retain"
RETAINED_PROPERTY = "ActiveMQ.Retained"
#: ActiveMQ's QoS enum names, the prefix of a persistent session's durable subscription names
QOS_NAMES = ("AT_MOST_ONCE", "AT_LEAST_ONCE", "EXACTLY_ONCE")
#: ActiveMQ's default prefetch of a topic subscription, and of a durable one
TOPIC_PREFETCH = 32766
DURABLE_PREFETCH = 100
QUEUE_PREFETCH = 1000
#: SUBACK's failure code (MQTT 3.1.1)
SUBSCRIBE_FAILURE = 0x80
#: CONNACK return codes
ACCEPTED, BAD_VERSION, ID_REJECTED, NOT_AUTHORIZED = 0, 1, 2, 5
#: the protocol names and levels a CONNECT may give: MQTT 3.1.1 and MQTT 3.1
PROTOCOLS = {("MQTT", 4), ("MQIsdp", 3)}
#: ActiveMQ's subscription strategies (the transport's ``subscriptionStrategy``)
STRATEGIES = ("default", "virtual-topic")
VIRTUAL_TOPIC = "VirtualTopic."
CONSUMER_PREFIX = "Consumer."

_ids = itertools.count(1)
QUEUE = DestinationKind.QUEUE


@attrs.define(slots=True, eq=False)
class _Subscription:
    topic_filter: str
    qos: int
    consumer_id: int
    durable_name: str | None
    #: ids of the messages delivered and not yet acked, oldest first: the broker's own record of the subscription
    #: (ActiveMQ's in-flight list, which an INDIVIDUAL ack counts up to), mirrored so that an ack of the oldest can
    #: take the broker's one-message path (MqttSession._ack)
    unacked: deque[str] = attrs.field(factory=deque)


#: topic names whose destination a session keeps (MqttSession._destinations), and destination names whose encoded
#: MQTT topic it keeps (MqttSession._topics)
_DESTINATIONS_KEPT = 4096


class MqttSession:
    """The state of one client connection. ``write(bytes)`` sends to the client; ``close()`` ends the socket;
    ``link_stealer(client_id, session)`` takes over a client id held by another session of this listener."""

    def __init__(
        self,
        broker: Broker,
        write: Callable[[bytes], None],
        close: Callable[[], None],
        *,
        remote_address: str = "",
        steal_link: Callable[[str, MqttSession], bool] | None = None,
        subscription_strategy: str = "default",
        publish_dollar_topics: bool = False,
    ) -> None:
        self.broker = broker
        #: ActiveMQ's ``publishDollarTopics``: off, a PUBLISH to a ``$`` topic is acknowledged and dropped
        self.publish_dollar_topics = publish_dollar_topics
        self.virtual = subscription_strategy == "virtual-topic"
        self._write = write
        self._close = close
        self.remote_address = remote_address
        self._steal_link = steal_link
        self.connect: Connect | None = None
        #: the broker connection this session logged in as (None before CONNECT and after the end): the one door
        self.connection: BrokerConnection | None = None
        self.connection_id: int | None = None
        self.client_id = ""
        self.keep_alive = 0
        self._subs: dict[str, _Subscription] = {}
        self._by_consumer: dict[int, _Subscription] = {}
        #: packet id -> (subscription, message id) of a QoS 1/2 delivery awaiting PUBACK / PUBCOMP
        self._inflight: dict[int, tuple[_Subscription, str]] = {}
        self._next_packet_id = 0
        #: QoS 2 publishes answered with PUBREC, awaiting PUBREL
        self._received_qos2: set[int] = set()
        #: (subscription, message id) of QoS 0 deliveries written, to ack once the dispatch is over
        self._acks: list[tuple[_Subscription, str]] = []
        self._id_prefix = f"ID:{PROCESS_ID_PREFIX}-mqtt-{next(_ids)}:1:1:"
        self._published = 0
        #: the broker destination of each MQTT topic name this session published to (a name converted and parsed
        #: once, not per PUBLISH: what the STOMP and native parsers keep too); bounded, cleared when full
        self._destinations: dict[str, Destination] = {}
        #: the encoded MQTT topic of each broker destination name this session delivered from (bounded the same way)
        self._topics: dict[str, bytes] = {}
        self._producer_id = ""
        self.closed = False
        #: a PUBLISH waiting for the broker to admit it (producer flow control); the listener stops reading meanwhile
        self.held: tuple[Admission, Publish] | None = None

    @property
    def connected(self) -> bool:
        return self.connection_id is not None

    # -- packets in -------------------------------------------------------------------------------------------------

    def receive(self, packet: Packet) -> None:
        """Handle one packet from the client; a protocol violation raises RemoteProtocolError (close, no reply)."""
        if type(packet) is Publish and self.connection_id is not None:  # the per-message packets first
            self._on_publish(packet)
            return
        if type(packet) is PubAck and self.connection_id is not None:
            self._acked(packet.packet_id)
            return
        if isinstance(packet, Connect):
            self._on_connect(packet)
            return
        if not self.connected:
            raise RemoteProtocolError("Not connected.")
        if isinstance(packet, Publish):
            self._on_publish(packet)
        elif isinstance(packet, PubAck):
            self._acked(packet.packet_id)
        elif isinstance(packet, PubRec):
            self._write(encode_pubrel(packet.packet_id))
        elif isinstance(packet, PubComp):
            self._acked(packet.packet_id)
        elif isinstance(packet, PubRel):
            self._received_qos2.discard(packet.packet_id)
            self._write(encode_pubcomp(packet.packet_id))
        elif isinstance(packet, Subscribe):
            self._on_subscribe(packet)
        elif isinstance(packet, Unsubscribe):
            self._on_unsubscribe(packet)
        elif isinstance(packet, PingReq):
            self._write(encode_pingresp())
        elif isinstance(packet, Disconnect):
            self.disconnect(clean=True)

    def _refuse_connect(self, code: int, why: str) -> None:
        log.info("MQTT CONNECT from %s refused (%d): %s", self.remote_address, code, why)
        self._write(encode_connack(code))
        self.closed = True
        self._close()

    def _on_connect(self, connect: Connect) -> None:
        if self.connect is not None:
            raise RemoteProtocolError("Already connected.")
        self.connect = connect
        if connect.protocol_level not in (3, 4):
            self._refuse_connect(BAD_VERSION, f"protocol level {connect.protocol_level}")
            return
        if (connect.protocol_name, connect.protocol_level) not in PROTOCOLS:
            # ActiveMQ closes the socket without a CONNACK (recorded: MQTT level 3, MQIsdp level 4, "hj")
            raise RemoteProtocolError(
                f"protocol {connect.protocol_name!r} level {connect.protocol_level} is neither MQTT 3.1.1 nor 3.1"
            )
        if connect.password is not None and connect.username is None and connect.protocol_level != 3:
            raise RemoteProtocolError("Password given without a user name")
        client_id = connect.client_id
        if not client_id:
            if not connect.clean_session:
                self._refuse_connect(ID_REJECTED, "an empty client id needs a clean session")
                return
        elif self.broker.client_connected(client_id) and (
            self._steal_link is None or not self._steal_link(client_id, self)
        ):
            self._refuse_connect(ID_REJECTED, f"client id {client_id!r} is in use")
            return
        password = None if connect.password is None else connect.password.decode("utf-8", "replace")
        try:
            self.connection = self.broker.connect(
                client_id or None, user=connect.username, password=password, remote=True
            )
            self.connection_id = self.connection.connection_id
        except InvalidClientIdError as exc:
            self._refuse_connect(ID_REJECTED, exc.message)
            return
        except AccessDenied as exc:
            self._refuse_connect(NOT_AUTHORIZED, exc.message)
            return
        self.client_id = client_id or f"{self._id_prefix}{self.connection_id}"
        self._producer_id = f"{self._id_prefix}{self.connection_id}"
        self.keep_alive = connect.keep_alive
        self._write(encode_connack(ACCEPTED))
        self._take_up_persistent_session(connect.clean_session)

    def _take_up_persistent_session(self, clean: bool) -> None:
        """A clean session removes the client id's durable subscriptions; a persistent one subscribes them again."""
        if not self.connect or not self.connect.client_id:
            return
        assert self.connection_id is not None
        if self.virtual:
            self._take_up_queues(clean)
        for durable in self.broker.durable_subscriptions():
            if durable.client_id != self.client_id or durable.active:
                continue
            prefix, _, topic_filter = durable.name.partition(":")
            if prefix not in QOS_NAMES or not topic_filter:
                continue
            if clean:
                self._door().dispatch(c.Unsubscribe(durable.name))
            else:
                self._subscribe(topic_filter, QOS_NAMES.index(prefix))

    def _queue_prefix(self) -> str:
        return f"{CONSUMER_PREFIX}{to_activemq(self.client_id)}:"

    def _take_up_queues(self, clean: bool) -> None:
        """The virtual-topic strategy's persistent subscriptions are queues ``Consumer.<id>:<QoS>.VirtualTopic.<t>``:
        a clean session empties them, a persistent one consumes them again."""
        prefix = self._queue_prefix()
        for name in self.broker.queue_names():
            if not name.startswith(prefix):
                continue
            qos_name, _, rest = name[len(prefix) :].partition(".")
            if qos_name not in QOS_NAMES or not rest.startswith(VIRTUAL_TOPIC):
                continue
            if clean:
                self.broker.purge(name)
            else:
                self._subscribe(from_activemq(rest[len(VIRTUAL_TOPIC) :]), QOS_NAMES.index(qos_name))

    def _topic_of(self, topic: str) -> str:
        """The ActiveMQ topic an MQTT topic name or filter reads or writes (``VirtualTopic.`` in front with the
        virtual-topic strategy)."""
        converted = to_activemq(topic)
        if self.virtual and not converted.startswith(VIRTUAL_TOPIC):
            return VIRTUAL_TOPIC + converted
        return converted

    def _on_publish(self, publish: Publish) -> None:
        destination = self._destinations.get(publish.topic)
        if destination is not None:  # a topic name this session published to before: its checks passed then
            self._send(self._message(publish, destination), publish)
            return
        if has_wildcard(publish.topic):
            raise RemoteProtocolError("The topic name must not contain wildcard characters.")
        if not publish.topic or "\x00" in publish.topic:
            raise RemoteProtocolError(f"invalid topic name {publish.topic!r}")  # MQTT 3.1.1, 4.7.3
        if publish.topic.startswith("$") and not self.publish_dollar_topics:
            # ActiveMQ answers and drops it (publishDollarTopics off by default; recorded): no subscriber gets it
            self._answer_publish(publish)
            return
        try:
            destination = self._destination(publish.topic)
        except InvalidDestination as exc:  # a name no destination can have: the peer's error, one line in the log
            raise RemoteProtocolError(f"invalid topic name {publish.topic!r}: {exc}") from None
        self._send(self._message(publish, destination), publish)

    def release_held(self, error: MinibrokerError | None) -> None:
        """The held PUBLISH was admitted (or its wait failed): send it and answer it, as ActiveMQ would."""
        held, self.held = self.held, None
        if held is None:
            return
        _, publish = held
        if error is not None:
            log.warning("Failed to send MQTT Publish: %s: %s", publish.topic, error)
            self._answer_publish(publish)
        else:
            self._send(self._message(publish, self._destination(publish.topic)), publish, admitted=True)

    def _destination(self, topic: str) -> Destination:
        """The broker topic of an MQTT topic name, kept for the next PUBLISH to it."""
        destination = self._destinations.get(topic)
        if destination is None:
            destination = Destination.topic(self._topic_of(topic))
            if len(self._destinations) >= _DESTINATIONS_KEPT:
                self._destinations.clear()
            self._destinations[topic] = destination
        return destination

    def _message(self, publish: Publish, destination: Destination) -> Message:
        self._published += 1
        properties: dict[str, int | bool] = {QOS_PROPERTY: publish.qos}
        if publish.retain:
            properties[RETAIN_PROPERTY] = True
        return Message(
            f"{self._producer_id}:{self._published}",
            destination,
            publish.payload,
            properties,
            4,
            publish.qos != 0,
            self.broker.clock.now(),
            producer_id=self._producer_id,
        )

    def _send(self, message: Message, publish: Publish, *, admitted: bool = False) -> None:
        """Send and answer ``publish``, or hold it while producer flow control makes it wait (``admitted``: it
        waited already)."""
        try:
            door = self._door()
            if admitted:
                door.send(message)
            elif not door.send_if_admitted(message):
                admission = self.broker.admit(message.destination)
                if admission is not None:
                    self.held = (admission, publish)
                    return
                door.send(message)
        except MinibrokerError as exc:  # ActiveMQ logs the failure and answers the publish all the same
            log.warning("Failed to send MQTT Publish: %s: %s", publish.topic, exc)
        self._answer_publish(publish)

    def _answer_publish(self, publish: Publish) -> None:
        if publish.qos == 1 and publish.packet_id is not None:
            self._write(encode_puback(publish.packet_id))
        elif publish.qos == 2 and publish.packet_id is not None:
            self._received_qos2.add(publish.packet_id)
            self._write(encode_pubrec(publish.packet_id))

    def _on_subscribe(self, subscribe: Subscribe) -> None:
        granted = []
        for topic_filter, qos in subscribe.topics:
            validate_filter(topic_filter)
            granted.append(self._subscribe(topic_filter, qos))
        self._write(encode_suback(subscribe.packet_id, granted))

    def _subscribe(self, topic_filter: str, qos: int) -> int:
        assert self.connection_id is not None and self.connect is not None
        existing = self._subs.get(topic_filter)
        if existing is not None:
            if existing.qos == qos:
                return qos
            self._unsubscribe(topic_filter)
        durable_name = None
        destination = Destination.topic(self._topic_of(topic_filter))
        prefetch = TOPIC_PREFETCH
        if not self.connect.clean_session and self.connect.client_id and qos >= 1:
            if self.virtual and not to_activemq(topic_filter).startswith(VIRTUAL_TOPIC):
                if has_wildcard(topic_filter):  # a queue per filter cannot be fed by a wildcard
                    log.warning(
                        "Error subscribing to %s: a persistent virtual-topic subscription is to one topic", topic_filter
                    )
                    return SUBSCRIBE_FAILURE if self.connect.protocol_level == 4 else qos
                destination = Destination(QUEUE, f"{self._queue_prefix()}{QOS_NAMES[qos]}.{destination.name}")
                prefetch = QUEUE_PREFETCH
            else:
                durable_name = f"{QOS_NAMES[qos]}:{topic_filter}"
                prefetch = DURABLE_PREFETCH
        info = ConsumerInfo(destination, prefetch=prefetch, subscription_name=durable_name, retroactive=True)
        sub = _Subscription(topic_filter, qos, 0, durable_name)
        try:
            sub.consumer_id = self._door().add_consumer(info, functools.partial(self._on_dispatch, sub))
        except MinibrokerError as exc:
            log.warning("Error subscribing to %s: %s", topic_filter, exc)
            return SUBSCRIBE_FAILURE if self.connect.protocol_level == 4 else qos
        self._subs[topic_filter] = sub
        self._by_consumer[sub.consumer_id] = sub
        return qos

    def _on_unsubscribe(self, unsubscribe: Unsubscribe) -> None:
        for topic_filter in unsubscribe.topics:
            validate_filter(topic_filter)
            self._unsubscribe(topic_filter)
        self._write(encode_unsuback(unsubscribe.packet_id))

    def _unsubscribe(self, topic_filter: str) -> None:
        sub = self._subs.pop(topic_filter, None)
        if sub is None or self.connection_id is None:
            return
        self._by_consumer.pop(sub.consumer_id, None)
        self._door().dispatch(c.RemoveConsumer(sub.consumer_id))
        if sub.durable_name is not None:
            try:
                self._door().dispatch(c.Unsubscribe(sub.durable_name))
            except MinibrokerError:  # ActiveMQ ignores a failed removal
                pass

    # -- deliveries -------------------------------------------------------------------------------------------------

    def _on_dispatch(self, sub: _Subscription, dispatch: Dispatch) -> None:
        message = dispatch.message
        if message is None or self.closed or self.connection_id is None:
            return
        props = message.properties
        qos = props.get(QOS_PROPERTY)
        if qos.__class__ is not int or not 0 <= qos <= 2:  # else what MQTT published
            qos = _qos_of(qos, message.persistent)
        if qos > sub.qos:
            qos = sub.qos
        retained = props.get(RETAINED_PROPERTY) is True
        body = message.body
        if body.__class__ is bytes and message.type != "Advisory":  # what MQTT and most JMS clients publish
            payload: bytes = body
        elif message.type == "Advisory":  # ActiveMQ's advisory carries a data structure, no content: empty payload
            payload = b""
        else:
            # a text as ActiveMQ writes it: UTF-8, "?" for a lone surrogate (Java's String.getBytes)
            payload = java_utf8(body) if isinstance(body, str) else body if isinstance(body, bytes) else _payload(body)
        name = message.destination.name
        topic = self._topics.get(name)
        if topic is None:
            topic = self._topics[name] = self._topic_bytes(name)
        message_id = message.message_id
        sub.unacked.append(message_id)
        if qos == 0:  # acked once written; not from inside the broker's dispatch (run_pending)
            self._write(encode_publish_to(topic, payload, 0, retained))
            self._acks.append((sub, message_id))
            return
        packet_id = self._new_packet_id()
        self._inflight[packet_id] = (sub, message_id)
        self._write(encode_publish_to(topic, payload, qos, retained, dispatch.redelivery_counter > 0, packet_id))

    def _topic_bytes(self, name: str) -> bytes:
        """The MQTT topic a message from broker destination ``name`` is published on, encoded (see ``_topics``)."""
        if len(self._topics) >= _DESTINATIONS_KEPT:
            self._topics.clear()
        if self.virtual and VIRTUAL_TOPIC in name:  # ActiveMQ's strategy: the name after ``VirtualTopic.``
            name = name[name.index(VIRTUAL_TOPIC) + len(VIRTUAL_TOPIC) :]
        return encode_topic(from_activemq(name))

    def run_pending(self) -> None:
        """Ack the QoS 0 deliveries written since the last call (the listener calls it when it writes)."""
        acks, self._acks = self._acks, []
        if self.connection_id is None:
            return
        by_consumer = self._by_consumer
        for sub, message_id in acks:
            if by_consumer.get(sub.consumer_id) is sub:
                self._ack(sub, message_id)

    def _ack(self, sub: _Subscription, message_id: str) -> None:
        """The INDIVIDUAL ack of one delivery. Of the oldest one the subscription holds (almost always), the
        broker's one-message path (``ack_one``), which leaves out what ActiveMQ's INDIVIDUAL ack counts besides its
        message: the deliveries before it, of which there are none then; of any other, the full ack, and the
        mirror drops what the broker counted with it (acks.py's ``count_before``). Both paths change the broker
        alike (tests/plugins/mqtt/test_session_acks.py); the fast one costs about a fifth of the instructions."""
        door = self._door()
        unacked = sub.unacked
        if unacked and unacked[0] == message_id and door.ack_one(sub.consumer_id, message_id, individual=True):
            unacked.popleft()
            return
        self._ack_reference(door, sub, message_id)

    @staticmethod
    def _ack_reference(door: BrokerConnection, sub: _Subscription, message_id: str) -> None:
        """The full INDIVIDUAL ack (the reference path of :meth:`_ack`)."""
        door.ack(MessageAck(sub.consumer_id, AckType.INDIVIDUAL, message_id, message_id, 1))
        unacked = sub.unacked
        if message_id in unacked:  # the broker counted every delivery before it as acked too
            while unacked.popleft() != message_id:
                pass
        else:
            unacked.clear()

    def _new_packet_id(self) -> int:
        packet_id = self._next_packet_id % 65535 + 1
        if packet_id not in self._inflight:  # the next one is free: all but a client that acks nothing for long
            self._next_packet_id = packet_id
            return packet_id
        for _ in range(65535):
            self._next_packet_id = self._next_packet_id % 65535 + 1
            if self._next_packet_id not in self._inflight:
                return self._next_packet_id
        raise RemoteProtocolError("65535 deliveries await acknowledgement")

    def _acked(self, packet_id: int) -> None:
        held = self._inflight.pop(packet_id, None)
        if held is None or self.connection_id is None:
            return
        sub, message_id = held
        if self._by_consumer.get(sub.consumer_id) is not sub:
            return
        try:
            self._ack(sub, message_id)
        except MinibrokerError as exc:
            log.debug("MQTT ack of %s not applied: %s", message_id, exc)

    # -- the end ----------------------------------------------------------------------------------------------------

    def disconnect(self, *, clean: bool) -> None:
        """The connection ends: a clean DISCONNECT, or a lost/refused one (the will is published then)."""
        if self.closed:
            return
        self.closed = True
        connection, self.connection = self.connection, None
        if connection is not None:
            connect = self.connect
            if not clean and connect is not None and connect.will_topic is not None:
                will = Publish(connect.will_topic, connect.will_message or b"", connect.will_qos, connect.will_retain)
                try:
                    if not has_wildcard(will.topic):
                        connection.send(self._message(will, self._destination(will.topic)))
                except MinibrokerError as exc:
                    log.warning("Failed to publish Will Message to %s: %s", will.topic, exc)
            self.connection_id = None
            connection.close(-1 if clean else None)
        self._close()

    def _door(self) -> BrokerConnection:
        """The broker connection this session logged in as: every broker operation goes through it."""
        connection = self.connection
        if connection is None:
            raise ConnectionClosed("the MQTT session is not connected")
        return connection

    def pending_work(self) -> list[str]:
        """What this session still owes (for ``Broker.settled``): deliveries awaiting the client's ack do not count."""
        return [] if self.held is None else [f"mqtt {self.client_id}: a PUBLISH waits for the broker to admit it"]


def _payload(body: Body) -> bytes:
    """What ActiveMQ's MQTT converter publishes for a Map-, Stream- or ObjectMessage: a map's ``Map.toString()``
    (HashMap order), a stream's or an object's body bytes as ActiveMQ holds them."""
    if isinstance(body, ObjectBody):
        return body.data
    if isinstance(body, tuple):
        return marshal_stream(body)
    assert not isinstance(body, (str, bytes))
    ordered = {key: body[key] for key in java_map_order(list(body))}
    return (
        "{"
        + ", ".join(f"{k}={v.decode('utf-8', 'replace') if isinstance(v, bytes) else v}" for k, v in ordered.items())
        + "}"
    ).encode()


def _qos_of(value: object, persistent: bool) -> int:
    """A delivered message's QoS, as ActiveMQ's ``convertMessage`` reads ``ActiveMQ.MQTT.QoS`` with
    ``getIntProperty``: a number, or a text holding one (a STOMP client's header); without it, 0 when persistent and
    1 when not (ActiveMQ's inversion). A value no QoS has falls back the same way."""
    if isinstance(value, str):  # Integer.valueOf: digits with an optional sign, nothing around them
        value = int(value) if (value[1:].isdigit() and value[0] in "+-") or value.isdigit() else None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2:
        return value
    return 0 if persistent else 1
