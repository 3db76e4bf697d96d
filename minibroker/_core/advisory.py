"""Advisory messages: what ActiveMQ's ``AdvisoryBroker`` publishes about consumers, producers, connections and
messages that expire or go to a dead-letter queue, on the topics ActiveMQ names.

=================================================  ===============================================================
topic                                              published when (data structure; properties)
=================================================  ===============================================================
``ActiveMQ.Advisory.Consumer.<Type>.<name>``       a consumer comes (ConsumerInfo) or goes (RemoveInfo);
                                                   ``consumerCount``: the destination's consumers after the change
``ActiveMQ.Advisory.Producer.<Type>.<name>``       a producer with a destination comes or goes (ProducerInfo,
                                                   RemoveInfo); ``producerCount`` likewise
``ActiveMQ.Advisory.Connection``                   a connection opens (ConnectionInfo) or closes (RemoveInfo)
``ActiveMQ.Advisory.Queue`` (``.Topic``,            a destination is made or removed (DestinationInfo,
``.TempQueue``, ``.TempTopic``)                     ``operationType`` 0 add, 1 remove)
``ActiveMQ.Advisory.MasterBroker``                  the broker started (no data structure; kept as its last image)
``ActiveMQ.Advisory.Expired.<Type>.<name>``        a message expires (the message, body cleared;
                                                   ``orignalMessageId``, ActiveMQ's spelling)
``ActiveMQ.Advisory.MessageDLQd.<Type>.<name>``    a message is dead-lettered (the message, body cleared)
=================================================  ===============================================================

``<Type>`` is ``Queue``, ``Topic``, ``TempQueue`` or ``TempTopic``. Every advisory is a non-persistent message of
priority 0 and JMSType ``Advisory`` with ``originBrokerName``, ``originBrokerId`` and ``originBrokerURL``. A Java
client reads the data structure as an object (``getDataStructure()``); minibroker carries it as JSON text in the body,
with its ActiveMQ class name under ``"dataStructure"`` (:func:`minibroker.advisory.data_structure` reads it back).

A new subscriber to consumer, producer, connection or destination advisories first gets the present state replayed,
to itself alone: one ConsumerInfo per consumer it would have heard of, and so on (ActiveMQ's ``addConsumer`` on an
advisory topic). Which replays a subscription gets follows ActiveMQ's ``AdvisorySupport`` tests on its name, not on
what it reads: ``ActiveMQ.Advisory.>`` gets none of them (only the master broker's last image). Nothing is advised
about advisory topics themselves, nor about a durable subscription's internal queue.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Mapping

from ..message import Destination, DestinationKind, Message, PropertyValue, jms_class

__all__ = [
    "ADVISORY_PREFIX",
    "BROKER_NAME",
    "advisory_message",
    "advisory_topic",
    "connection_info",
    "consumer_info",
    "destination_info",
    "java_hash_order",
    "message_info",
    "producer_info",
    "remove_info",
]

ADVISORY_PREFIX = "ActiveMQ.Advisory."
CONSUMER = ADVISORY_PREFIX + "Consumer."
PRODUCER = ADVISORY_PREFIX + "Producer."
CONNECTION = ADVISORY_PREFIX + "Connection"
EXPIRED = ADVISORY_PREFIX + "Expired."
DLQD = ADVISORY_PREFIX + "MessageDLQd."
MASTER_BROKER = ADVISORY_PREFIX + "MasterBroker"
#: the topics of destination advisories: a subscriber to one of them hears of the destinations there are
DESTINATION_TOPICS = frozenset(ADVISORY_PREFIX + kind for kind in ("Queue", "Topic", "TempQueue", "TempTopic"))
#: the broker name advisories carry (ActiveMQ's default ``brokerName``)
BROKER_NAME = "localhost"

#: one id per process and a sequence: advisory ids never collide across processes or restarts
_PRODUCER_ID = f"ID:minibroker-advisory-{os.urandom(6).hex()}:1:0:0"  # 12 random hex digits; no uuid module
_SEQUENCE: Iterator[int] = itertools.count(1)


def advisory_topic(prefix: str, destination: Destination, temporary: bool = False) -> Destination:
    """``prefix`` + ``Queue.<name>`` (or ``Topic.``, ``TempQueue.``, ``TempTopic.``), as ActiveMQ's AdvisorySupport."""
    kind = "Queue" if destination.kind is DestinationKind.QUEUE else "Topic"
    return Destination.topic(f"{prefix}{'Temp' if temporary else ''}{kind}.{destination.name}")


def advisory_message(
    topic: Destination,
    data: Mapping[str, object],
    now: float,
    broker_name: str = BROKER_NAME,
    **properties: PropertyValue,
) -> Message:
    """One advisory: non-persistent, priority 0, JMSType ``Advisory``, the data structure as JSON text, naming the
    broker that sent it (``originBrokerName``, ``originBrokerURL``: ``vm://<name>``, as an embedded ActiveMQ's)."""
    props: dict[str, PropertyValue] = {
        "originBrokerName": broker_name,
        "originBrokerId": "ID:minibroker-0:1",  # shaped as ActiveMQ's broker ids (ID:<host>-<port>-<time>-0:1)
        "originBrokerURL": f"vm://{broker_name}",
        **properties,
    }
    import json  # with the first advisory, not with the core (issue 45)

    return Message(
        message_id=f"{_PRODUCER_ID}:{next(_SEQUENCE)}",
        destination=topic,
        body=json.dumps(data, sort_keys=True),
        properties=props,
        persistent=False,
        priority=0,  # ActiveMQ builds advisories as bare ActiveMQMessages: priority 0, no timestamp (recorded)
        timestamp=0.0,
        type="Advisory",
        producer_id=_PRODUCER_ID,
    )


def consumer_info(
    connection_name: str,
    consumer_id: int,
    destination: Destination,
    selector: str | None,
    prefetch: int,
    *,
    browser: bool = False,
    no_local: bool = False,
    exclusive: bool = False,
    priority: int = 0,
    subscription_name: str | None = None,
) -> dict[str, object]:
    """ActiveMQ's ConsumerInfo, with the fields its STOMP connector writes (plugins/stomp/advisories.py)."""
    info: dict[str, object] = {
        "dataStructure": "ConsumerInfo",
        "consumerId": f"{connection_name}:1:{consumer_id}",
        "destination": str(destination),
        "selector": selector,
        "prefetchSize": prefetch,
        "browser": browser,
        "noLocal": no_local,
        "exclusive": exclusive,
        "priority": priority,
    }
    if subscription_name is not None:
        info["subscriptionName"] = subscription_name
    return info


def producer_info(connection_name: str, producer_id: int, destination: Destination) -> dict[str, object]:
    return {
        "dataStructure": "ProducerInfo",
        "producerId": f"{connection_name}:1:{producer_id}",
        "destination": str(destination),
    }


def connection_info(connection_name: str, client_id: str | None) -> dict[str, object]:
    return {"dataStructure": "ConnectionInfo", "connectionId": connection_name, "clientId": client_id}


def remove_info(object_id: str) -> dict[str, object]:
    return {"dataStructure": "RemoveInfo", "objectId": object_id}


def message_info(message: Message) -> dict[str, object]:
    """A copy of an expired or dead-lettered message as the advisory carries it: headers, no body (ActiveMQ clears
    it unless ``includeBodyForAdvisory``)."""
    return {
        "dataStructure": jms_class(message.body),
        "messageId": message.message_id,
        "destination": str(message.destination),
        "persistent": message.persistent,
        "priority": message.priority,
    }


def destination_info(destination: Destination, temporary: bool, *, added: bool) -> dict[str, object]:
    """ActiveMQ's DestinationInfo: operation type 0 (add) or 1 (remove) and the destination's qualified name."""
    text = f"temp-{destination}" if temporary else str(destination)
    return {"dataStructure": "DestinationInfo", "operationType": 0 if added else 1, "destination": text}


def master_broker_info() -> dict[str, object]:
    """The master broker advisory carries no data structure."""
    return {"dataStructure": None}


def _java_string_hash(text: str) -> int:
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h


def java_hash_order(names: list[str]) -> list[str]:
    """``names`` (in the order they were made) in the order a Java ``ConcurrentHashMap`` keyed by them iterates:
    by bucket of the spread string hash in a table sized for that many keys, then in insertion order. ActiveMQ
    replays destination advisories from such a map, so a new subscriber hears of the destinations in this order
    (a resize can reverse part of one bucket, which this leaves out: buckets rarely hold two names)."""
    size = 16
    while len(names) >= size * 3 // 4:
        size *= 2

    def bucket(name: str) -> int:
        h = _java_string_hash(name)
        return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (size - 1)

    return sorted(names, key=bucket)
