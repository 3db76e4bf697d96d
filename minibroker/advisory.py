"""Reading ActiveMQ's advisory messages: which topic says what, and the data structure an advisory carries.

The broker publishes consumer, producer, connection, destination, expired and dead-letter advisories as ActiveMQ does
(the table is in ``docs/features.md``; ``Broker(advisory_support=False)`` turns them off). A Java client reads an
advisory's data structure as an object; minibroker carries it as JSON text in the body, which :func:`data_structure`
reads back::

    watcher = await session.create_consumer(consumer_advisory_topic("orders"))
    msg = await watcher.receive(timeout=5)
    assert data_structure(msg)["dataStructure"] == "ConsumerInfo" and msg.properties["consumerCount"] == 1
"""

from __future__ import annotations

import json
from typing import Protocol

from .message import Destination

__all__ = [
    "connection_advisory_topic",
    "consumer_advisory_topic",
    "data_structure",
    "destination_advisory_topic",
    "dlq_advisory_topic",
    "expired_advisory_topic",
    "producer_advisory_topic",
]


class _AdvisoryLike(Protocol):
    @property
    def type(self) -> str | None: ...

    @property
    def body(self) -> str | bytes: ...


def data_structure(message: _AdvisoryLike) -> dict[str, object] | None:
    """The data structure of an advisory (``{"dataStructure": "ConsumerInfo", "consumerId": ..., ...}``); None for a
    message that is no advisory."""
    if message.type != "Advisory" or not isinstance(message.body, str):
        return None
    value = json.loads(message.body)
    return value if isinstance(value, dict) else None


def _topic(prefix: str, destination: str | Destination) -> str:
    dest = Destination.parse(destination)
    return f"topic://ActiveMQ.Advisory.{prefix}.{'Queue' if dest.is_queue else 'Topic'}.{dest.name}"


def consumer_advisory_topic(destination: str | Destination) -> str:
    """``topic://ActiveMQ.Advisory.Consumer.Queue.orders`` for ``"orders"`` (``.Topic.`` for a topic)."""
    return _topic("Consumer", destination)


def producer_advisory_topic(destination: str | Destination) -> str:
    """``topic://ActiveMQ.Advisory.Producer.Queue.orders`` for ``"orders"`` (``.Topic.`` for a topic)."""
    return _topic("Producer", destination)


def expired_advisory_topic(destination: str | Destination) -> str:
    """``topic://ActiveMQ.Advisory.Expired.Queue.orders`` for ``"orders"``."""
    return _topic("Expired", destination)


def dlq_advisory_topic(destination: str | Destination) -> str:
    """``topic://ActiveMQ.Advisory.MessageDLQd.Queue.orders`` for ``"orders"``."""
    return _topic("MessageDLQd", destination)


def destination_advisory_topic(kind: str = "queue", *, temporary: bool = False) -> str:
    """``topic://ActiveMQ.Advisory.Queue`` (``.Topic`` for ``kind="topic"``; ``.TempQueue``, ``.TempTopic`` with
    ``temporary``): a DestinationInfo each time such a destination is made or removed."""
    if kind not in ("queue", "topic"):
        raise ValueError(f"kind must be 'queue' or 'topic', not {kind!r}")
    return f"topic://ActiveMQ.Advisory.{'Temp' if temporary else ''}{kind.capitalize()}"


def connection_advisory_topic() -> str:
    """``topic://ActiveMQ.Advisory.Connection``."""
    return "topic://ActiveMQ.Advisory.Connection"
