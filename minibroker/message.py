"""Destinations and the message value that travels through the broker.

A :class:`Message` is created once by a producer and then shared, unchanged, by the broker and every in-process
consumer (no copies on the hot path). What changes per delivery (the redelivery counter, the dispatch sequence) lives
beside it in the broker's queue entry and in the dispatch, never in the message.
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Mapping
from typing import Any, Protocol

import attrs

from .errors import InvalidDestination

__all__ = [
    "ORIGINAL_EXPIRATION",
    "Destination",
    "DestinationKind",
    "HasDestination",
    "Message",
    "ObjectBody",
    "PropertyValue",
    "composite_parts",
    "string_properties",
    "stringify",
    "temporary_text",
]

PropertyValue = str | int | float | bool | bytes | None

#: the property a dead-lettered copy carries its former expiration in (epoch ms, 0: none), as ActiveMQ's broker
#: stamps it; ActiveMQ's ``Message.copy()`` drops it, so a copy the broker makes of a message, and what a JMS client
#: receives, never carries it (``minibroker.client`` drops it too)
ORIGINAL_EXPIRATION = "originalExpiration"


@attrs.frozen(slots=True)
class ObjectBody:
    """An ObjectMessage's body: the Java-serialized object, as opaque bytes (Python cannot run Java serialization).

    ``ObjectBody(data)`` carries bytes a Java producer would send (an ``ObjectOutputStream``'s output);
    ``ObjectBody.of("text")`` serializes a String, a boxed primitive (a number, a :mod:`minibroker.typed` wrapper, a
    bool) or ``byte[]`` exactly as ActiveMQ's ``setObject`` does; ``ObjectBody(b"")`` is an ObjectMessage without an
    object. :attr:`class_name` is read from the stream; :meth:`value` reads back what ``of`` writes.
    """

    data: bytes = attrs.field(converter=bytes)

    @classmethod
    def of(cls, value: object, class_name: str | None = None) -> ObjectBody:
        """``value`` serialized as Java would (``class_name="java.lang.Character"`` makes a one-character str a
        Character); MessageFormatError for a value Python cannot serialize."""
        from ._java.bodies import serialize
        from .errors import MessageFormatError

        data = serialize(value, class_name)
        if data is None:
            raise MessageFormatError(
                f"minibroker serializes a String, a boxed primitive or byte[], not a {type(value).__name__}"
                + (f" as {class_name}" if class_name else ""),
                value=repr(value),
            )
        return cls(data)

    @property
    def class_name(self) -> str | None:
        """The serialized object's class (``java.lang.String``, ``com.acme.Order``); None without an object."""
        from ._java.bodies import serialized_class_name

        return serialized_class_name(self.data)

    def value(self) -> object:
        """The object, for the classes :meth:`of` writes (None without one); MessageFormatError for any other
        class (Python cannot deserialize it)."""
        from ._java.bodies import deserialize
        from .errors import MessageFormatError

        try:
            return deserialize(self.data)[1]
        except ValueError as exc:
            raise MessageFormatError(str(exc), value=self.class_name) from None

    def __len__(self) -> int:
        return len(self.data)


#: a message's body: text (TextMessage), bytes (BytesMessage), a read-only map of names to values (MapMessage), a
#: tuple of values (StreamMessage) or an :class:`ObjectBody` (ObjectMessage)
Body = str | bytes | Mapping[str, PropertyValue] | tuple[PropertyValue, ...] | ObjectBody


def _jms_value(value: object) -> bool:
    """Whether a JMS map or stream may hold ``value`` as it is."""
    return (
        isinstance(value, bool)
        or value is None
        or isinstance(value, (str, float))
        or (isinstance(value, int) and -(2**63) <= value < 2**63)
    )


def map_body(values: Mapping[Any, object]) -> Mapping[str, PropertyValue]:
    """A MapMessage's body, checked and read-only: names are non-empty str, values are what a JMS map holds (str,
    int in 64 bits, float, bool, bytes, None, or a :mod:`minibroker.typed` wrapper); else MessageFormatError."""
    from types import MappingProxyType

    from .errors import MessageFormatError

    checked: dict[str, PropertyValue] = {}
    for name, value in values.items():
        if not isinstance(name, str) or not name:
            raise MessageFormatError(f"a map entry's name is a non-empty str, not {name!r}", value=repr(name))
        if _jms_value(value):
            checked[name] = value  # type: ignore[assignment]
        elif isinstance(value, (bytes, bytearray, memoryview)):
            checked[name] = bytes(value)
        else:
            raise MessageFormatError(
                f"map entry {name!r}: a {type(value).__name__} is no JMS map value", value=repr(value)
            )
    return MappingProxyType(checked)


def stream_body(values: Any) -> tuple[PropertyValue, ...]:
    """A StreamMessage's body, checked and read-only: the values a JMS stream holds (as a map's), in order; else
    MessageFormatError."""
    from .errors import MessageFormatError

    checked: list[PropertyValue] = []
    for position, value in enumerate(values):
        if _jms_value(value):
            checked.append(value)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            checked.append(bytes(value))
        else:
            raise MessageFormatError(
                f"stream value {position}: a {type(value).__name__} is no JMS stream value", value=repr(value)
            )
    return tuple(checked)


def checked_body(body: object) -> Body:
    """A body a producer hands over, as the message carries it: str and bytes as they are, a mapping as a
    MapMessage's, a list or tuple as a StreamMessage's, an ObjectBody as it is; MessageFormatError for the rest."""
    if isinstance(body, (str, bytes, ObjectBody)):
        return body
    if isinstance(body, Mapping):
        return map_body(body)
    if isinstance(body, (list, tuple)):
        return stream_body(body)
    if isinstance(body, (bytearray, memoryview)):
        return bytes(body)
    from .errors import MessageFormatError

    raise MessageFormatError(
        f"a body is str, bytes, a mapping, a list or tuple, or an ObjectBody, not {type(body).__name__}",
        value=type(body).__name__,
    )


def jms_class(body: Body) -> str:
    """The ActiveMQ message class a body makes: ``ActiveMQTextMessage``, ``ActiveMQMapMessage``, ..."""
    if isinstance(body, str):
        return "ActiveMQTextMessage"
    if isinstance(body, bytes):
        return "ActiveMQBytesMessage"
    if isinstance(body, tuple):
        return "ActiveMQStreamMessage"
    if isinstance(body, ObjectBody):
        return "ActiveMQObjectMessage"
    return "ActiveMQMapMessage"


def _json_safe(value: object) -> object:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def body_as_bytes(body: Body) -> bytes:
    """A body where bytes are wanted (a Spark column, a preview): text as UTF-8, a map or a stream as its JSON (bytes
    values as UTF-8 text, Java types as their numbers), an object as its serialized bytes."""
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, bytes):
        return body
    if isinstance(body, ObjectBody):
        return body.data
    import json

    if isinstance(body, tuple):
        return json.dumps([_json_safe(v) for v in body]).encode()
    return json.dumps({k: _json_safe(v) for k, v in body.items()}, sort_keys=True).encode()


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


#: destinations by the text they were parsed from: a Destination is immutable, and building one (a frozen attrs
#: class) costs about 1.5 us, which edges paid per message where they had no cache of their own (MQTT did: 15% of
#: its broker instructions per message); bounded, cleared when full
_PARSED: dict[str, Destination] = {}
_PARSED_KEPT = 4096


@attrs.frozen(slots=True, unsafe_hash=False)
class Destination:
    """A queue or a topic. ``"orders"`` and ``"queue://orders"`` name a queue, ``"topic://prices"`` a topic."""

    kind: DestinationKind
    name: str
    # The hash, kept as a plain int: attrs' ``cache_hash`` keeps it in a wrapper object the garbage collector
    # tracks, one more per destination for every full collection to visit (50,000 retained topics: 50,000 more).
    _hash: int = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.kind, self.name)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[Destination], tuple[DestinationKind, str]]:
        # A str's hash differs between processes: a pickled destination is built again, never copied with its hash.
        return (Destination, (self.kind, self.name))

    @classmethod
    def parse(cls, text: str | Destination | HasDestination) -> Destination:
        """``"orders"``, ``"queue://orders"``, ``"topic://prices"``; ``"temp-queue://ID:..."`` and
        ``"temp-topic://ID:..."`` name a temporary destination (the broker knows it is one); a temporary destination
        object of the client (anything with a ``destination``) stands for its destination."""
        if isinstance(text, Destination):
            return text
        if text.__class__ is str:
            parsed = _PARSED.get(text)
            if parsed is not None:
                return parsed
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
        if cls is Destination:
            if len(_PARSED) >= _PARSED_KEPT:
                _PARSED.clear()
            _PARSED[text] = destination
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


# -- properties as text (for columnar readers) ------------------------------------------------------------------------


def stringify(value: PropertyValue) -> str | None:
    """A property value as text, for columnar readers (Spark's MAP<STRING,STRING>): JMS-style booleans, numbers as
    Python prints them, bytes in base64, None stays None."""
    if value is None:
        return None
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def string_properties(message: Message) -> list[tuple[str, str | None]]:
    """The message's properties as text, followed by the JMS headers that are set: JMSCorrelationID, JMSType,
    JMSReplyTo (``queue://name``), JMSXGroupID and JMSXGroupSeq."""
    props = [(k, stringify(v)) for k, v in message.properties.items()]
    if message.correlation_id is not None:
        props.append(("JMSCorrelationID", message.correlation_id))
    if message.type is not None:
        props.append(("JMSType", message.type))
    if message.reply_to is not None:
        props.append(("JMSReplyTo", str(message.reply_to)))
    if message.group_id is not None:
        props.append(("JMSXGroupID", message.group_id))
        props.append(("JMSXGroupSeq", str(message.group_seq)))
    return props
