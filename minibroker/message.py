"""Destinations and the message value that travels through the broker.

A :class:`Message` is created once by a producer and then shared, unchanged, by the broker and every in-process
consumer (no copies on the hot path). What changes per delivery (the redelivery counter, the dispatch sequence) lives
beside it in the broker's queue entry and in the dispatch, never in the message.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from .errors import InvalidDestination

__all__ = [
    "Destination",
    "DestinationKind",
    "HasDestination",
    "Message",
    "PropertyValue",
    "composite_parts",
    "temporary_text",
]

PropertyValue = str | int | float | bool | bytes | None
#: a message's body: text (TextMessage), bytes (BytesMessage) or a read-only map of names to values (MapMessage)
Body = str | bytes | Mapping[str, PropertyValue]


def map_body(values: Mapping[Any, object]) -> Mapping[str, PropertyValue]:
    """A MapMessage's body, checked and read-only: names are non-empty str, values are what a JMS map holds (str,
    int in 64 bits, float, bool, bytes, None, or a :mod:`minibroker.typed` wrapper); else MessageFormatError."""
    from types import MappingProxyType

    from .errors import MessageFormatError

    checked: dict[str, PropertyValue] = {}
    for name, value in values.items():
        if not isinstance(name, str) or not name:
            raise MessageFormatError(f"a map entry's name is a non-empty str, not {name!r}", value=repr(name))
        if (
            isinstance(value, bool)
            or value is None
            or isinstance(value, (str, float))
            or (isinstance(value, int) and -(2**63) <= value < 2**63)
        ):
            checked[name] = value
        elif isinstance(value, (bytes, bytearray, memoryview)):
            checked[name] = bytes(value)
        else:
            raise MessageFormatError(
                f"map entry {name!r}: a {type(value).__name__} is no JMS map value", value=repr(value)
            )
    return MappingProxyType(checked)


def body_as_bytes(body: Body) -> bytes:
    """A body where bytes are wanted (a Spark column, a preview): text as UTF-8, a map as its JSON (bytes values as
    UTF-8 text, Java types as their numbers)."""
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, bytes):
        return body
    import json

    return json.dumps(
        {k: v.decode("utf-8", "replace") if isinstance(v, bytes) else v for k, v in body.items()}, sort_keys=True
    ).encode()


class DestinationKind(enum.Enum):
    """A destination's domain: a queue (each message to one consumer) or a topic (to every subscriber)."""

    QUEUE = "queue"
    TOPIC = "topic"


class HasDestination(Protocol):
    """A client object that stands for a destination (a temporary queue or topic)."""

    @property
    def destination(self) -> Destination: ...


_PREFIXES = (
    ("queue://", DestinationKind.QUEUE),
    ("topic://", DestinationKind.TOPIC),
    ("temp-queue://", DestinationKind.QUEUE),
    ("temp-topic://", DestinationKind.TOPIC),
)


@attrs.frozen(slots=True, cache_hash=True)
class Destination:
    """A queue or a topic. ``"orders"`` and ``"queue://orders"`` name a queue, ``"topic://prices"`` a topic."""

    kind: DestinationKind
    name: str

    @classmethod
    def parse(cls, text: str | Destination | HasDestination) -> Destination:
        """``"orders"``, ``"queue://orders"``, ``"topic://prices"``; ``"temp-queue://ID:..."`` and
        ``"temp-topic://ID:..."`` name a temporary destination (the broker knows it is one); a temporary destination
        object of the client (anything with a ``destination``) stands for its destination."""
        if isinstance(text, Destination):
            return text
        inner = getattr(text, "destination", None)
        if isinstance(inner, Destination):
            return inner
        if not isinstance(text, str):
            raise InvalidDestination(f"a destination is a string, not {type(text).__name__}", destination=text)
        kind = DestinationKind.QUEUE
        name = text
        for prefix, k in _PREFIXES:
            if text.startswith(prefix):
                kind, name = k, text[len(prefix) :]
                break
        if not name or name.strip() != name or ("://" in name and "," not in name):
            raise InvalidDestination(f"invalid destination name {text!r}", destination=text)
        destination = cls(kind, name)
        if "," in name:
            composite_parts(destination)  # each part must be a destination
        return destination

    @classmethod
    def queue(cls, name: str) -> Destination:
        return cls.parse(f"queue://{name}")

    @classmethod
    def topic(cls, name: str) -> Destination:
        return cls.parse(f"topic://{name}")

    @property
    def is_queue(self) -> bool:
        return self.kind is DestinationKind.QUEUE

    @property
    def is_topic(self) -> bool:
        return self.kind is DestinationKind.TOPIC

    def __str__(self) -> str:
        return f"{self.kind.value}://{self.name}"


def composite_parts(destination: Destination) -> tuple[Destination, ...]:
    """The destinations of a composite (``"a,b"``, ``"queue://a,topic://b"``): a part without a prefix has the
    composite's own kind, as ActiveMQ reads them; duplicates once. A plain destination is its own one part."""
    if "," not in destination.name:
        return (destination,)
    parts: dict[Destination, None] = {}
    for text in destination.name.split(","):
        kind, name = destination.kind, text
        for prefix, k in _PREFIXES:
            if text.startswith(prefix):
                kind, name = k, text[len(prefix) :]
                break
        if not name or name.strip() != name or "://" in name:
            raise InvalidDestination(
                f"invalid destination {text!r} in the composite destination {destination}", destination=str(destination)
            )
        parts[Destination(kind, name)] = None
    return tuple(parts)


def temporary_text(destination: Destination) -> str:
    """``temp-queue://NAME`` or ``temp-topic://NAME``: how ActiveMQ writes a temporary destination."""
    return f"temp-{destination.kind.value}://{destination.name}"


@attrs.define(slots=True, eq=False)
class Message:
    """One message as sent: body, headers and application properties.

    ``timestamp`` and ``expiration`` are seconds on the broker's clock; ``expiration`` 0 means never. Messages compare
    by identity: two sends of equal content are two messages. Treat a message as immutable once sent: the broker
    and every in-process consumer share it (it is not frozen only because frozen attrs classes are slower to build,
    and one is built per send).
    """

    message_id: str
    destination: Destination
    body: Body
    properties: Mapping[str, PropertyValue] = attrs.field(factory=dict)
    priority: int = 4
    persistent: bool = True
    timestamp: float = 0.0
    expiration: float = 0.0
    correlation_id: str | None = None
    reply_to: Destination | None = None
    type: str | None = None
    group_id: str | None = None
    group_seq: int = 0
    producer_id: str = ""
    producer_seq: int = 0
    #: set on dead-lettered copies: where the message was when it failed (ActiveMQ's ``originalDestination`` header)
    original_destination: Destination | None = None

    def is_expired(self, now: float) -> bool:
        return self.expiration > 0 and now >= self.expiration

    def size_estimate(self) -> int:
        """A cheap estimate of the bytes this message holds, for memory limits."""
        return len(self.body) + 64 * (1 + len(self.properties))
