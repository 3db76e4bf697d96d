"""ActiveMQ's message commands and minibroker's :class:`~minibroker.message.Message`, both ways; destinations and
message ids too.

The JMS type is the command's class: a TextMessage's content is an int length and modified UTF-8, a MapMessage's a
primitive map, a StreamMessage's primitives one after the other, a BytesMessage's the bytes, an ObjectMessage's the
serialized object; a compressed body (the client's ``useCompression``) is inflated on the way in (a BytesMessage
keeps its length in four bytes before the zlib stream) and the broker keeps it plain. Times are epoch milliseconds on
the wire and seconds in minibroker. A message keeps the id its producer gave it; a message from another edge is
dispatched with its producer id and sequence parsed from its text (what the client's duplicate audit reads), and its
own text as ``textView`` when the two differ.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any

from minibroker.errors import MessageFormatError
from minibroker.message import Destination, DestinationKind, ObjectBody, map_body, stream_body
from minibroker.message import Message as BrokerMessage
from minibroker.refusals import body_refusal

from . import commands as ow
from .primitives import (
    OpenWireFormatError,
    Reader,
    Writer,
    decode_utf,
    encode_utf,
    marshal_primitive_list,
    marshal_primitive_map,
    unmarshal_primitive_list,
    unmarshal_primitive_map,
)

__all__ = [
    "broker_destination",
    "broker_message",
    "message_key",
    "openwire_destination",
    "openwire_message",
    "parse_producer_id",
]

_QUEUE = DestinationKind.QUEUE


# -- destinations ---------------------------------------------------------------------------------------------------


def broker_destination(destination: ow.ActiveMQDestination | None) -> Destination:
    """The broker's destination for an OpenWire one (a temporary one keeps its name: the broker knows it is one)."""
    if destination is None or not destination.physical_name:
        raise OpenWireFormatError("a command without its destination")
    name = destination.physical_name
    if isinstance(destination, ow.ActiveMQTempQueue):
        return Destination(_QUEUE, name)
    if isinstance(destination, ow.ActiveMQTempTopic):
        return Destination(DestinationKind.TOPIC, name)
    prefix = "queue://" if isinstance(destination, ow.ActiveMQQueue) else "topic://"
    return Destination.parse(prefix + name)


def openwire_destination(destination: Destination, temporary: bool = False) -> ow.ActiveMQDestination:
    if destination.kind is _QUEUE:
        return ow.ActiveMQTempQueue(destination.name) if temporary else ow.ActiveMQQueue(destination.name)
    return ow.ActiveMQTempTopic(destination.name) if temporary else ow.ActiveMQTopic(destination.name)


# -- ids --------------------------------------------------------------------------------------------------------------


def parse_producer_id(text: str) -> ow.ProducerId:
    """``ID:host-...:<connection n>:<session>:<producer>`` as ProducerId.toString() writes it; any other text is a
    producer of its own (session and value 0), so a client's audit still has a producer to count by."""
    parts = text.rsplit(":", 2)
    if len(parts) == 3 and parts[1].lstrip("-").isdigit() and parts[2].lstrip("-").isdigit():
        return ow.ProducerId(parts[0], int(parts[2]), int(parts[1]))
    return ow.ProducerId(text or "ID:minibroker", 0, 0)


def message_key(message_id: ow.MessageId) -> str:
    """The broker's id of the message an OpenWire MessageId names: its text view when it has one (a message from
    another edge), else ``<producer id>:<sequence>`` (what a Java producer's ids read as)."""
    if message_id.text_view is not None:
        return message_id.text_view
    return f"{message_id.producer_id}:{message_id.producer_sequence_id}"


def _message_id(message: BrokerMessage, broker_seq: int) -> ow.MessageId:
    producer = message.producer_id
    seq = message.producer_seq
    if not producer:  # the id's own text, when it has ActiveMQ's shape
        head, _, tail = message.message_id.rpartition(":")
        if head and tail.isdigit():
            producer, seq = head, int(tail)
    producer_id = parse_producer_id(producer)
    text = f"{producer_id}:{seq}"
    return ow.MessageId(None if text == message.message_id else message.message_id, producer_id, seq, broker_seq)


# -- bodies -----------------------------------------------------------------------------------------------------------


def _inflate(data: bytes) -> bytes:
    try:
        return zlib.decompress(data)
    except zlib.error as exc:
        raise MessageFormatError(f"a compressed body that does not inflate: {exc}") from None


def _body(command: ow.Message) -> Any:
    content = command.content
    if isinstance(command, ow.BlobMessage) or type(command) is ow.Message:
        raise body_refusal(None) if type(command) is ow.Message else _blob_refusal()
    if command.compressed and content is not None:
        if isinstance(command, ow.BytesMessage):
            # the plain length in four bytes, then the zlib stream of the client's whole buffer: keep the length's worth
            content = _inflate(content[4:])[: int.from_bytes(content[:4], "big")]
        else:
            content = _inflate(content)
    if isinstance(command, ow.TextMessage):
        if content is None:
            return ""
        reader = Reader(content)
        size = reader.i32()
        return "" if size < 0 else decode_utf(reader.take(size))
    if isinstance(command, ow.BytesMessage):
        return content or b""
    if isinstance(command, ow.MapMessage):
        return map_body(unmarshal_primitive_map(content) or {} if content else {})
    if isinstance(command, ow.StreamMessage):
        return stream_body(unmarshal_primitive_list(content) if content else [])
    if isinstance(command, ow.ObjectMessage):
        return ObjectBody(content or b"")
    raise body_refusal(type(command).__name__)


def _blob_refusal() -> Exception:
    from .refusals import refuse_openwire

    return refuse_openwire("openwire-blob-message", "ActiveMQBlobMessage")


def _content(body: object) -> tuple[type[ow.Message], bytes | None]:
    if isinstance(body, str):
        raw = encode_utf(body)
        out = Writer()
        out.i32(len(raw))
        out.raw(raw)
        return ow.TextMessage, out.getvalue()
    if isinstance(body, bytes):
        return ow.BytesMessage, body
    if isinstance(body, ObjectBody):  # no bytes: an ObjectMessage without its object (no content, as it came)
        return ow.ObjectMessage, body.data or None
    if isinstance(body, tuple):
        return ow.StreamMessage, marshal_primitive_list(body)
    if isinstance(body, Mapping):
        return ow.MapMessage, marshal_primitive_map(body)
    raise body_refusal(body)


# -- advisories -------------------------------------------------------------------------------------------------------


def _advisory_data(message: BrokerMessage) -> tuple[bool, ow.DataStructure | None]:
    """Is ``message`` an advisory, and the data structure it carries. minibroker keeps an advisory's data structure as
    JSON text; ActiveMQ sends a bare message whose ``dataStructure`` is the object (``ConsumerInfo``,
    ``ProducerInfo``, ``ConnectionInfo``, ``RemoveInfo``, ``DestinationInfo``, a copy of an expired or dead-lettered
    message, or none). The Java client reads it with ``getDataStructure()``, and its own advisory consumer learns from
    DestinationInfo which temporary destinations exist (it refuses to send to one it has not heard of)."""
    if message.type != "Advisory" or not isinstance(message.body, str) or not message.body.startswith("{"):
        return False, None
    try:
        data = json.loads(message.body)
        kind = data["dataStructure"]
    except (ValueError, KeyError, TypeError):
        return False, None
    try:
        return True, _structure(kind, data, message.destination.name)
    except (ValueError, KeyError, TypeError):
        return False, None


def _structure(kind: object, data: dict[str, Any], topic: str) -> ow.DataStructure | None:
    if kind == "DestinationInfo":
        return ow.DestinationInfo(destination=_advised(data["destination"]), operation_type=int(data["operationType"]))
    if kind == "ConsumerInfo":
        return ow.ConsumerInfo(
            consumer_id=_three_part(ow.ConsumerId, data["consumerId"]),
            destination=_advised(data["destination"]),
            selector=data.get("selector"),
            prefetch_size=int(data.get("prefetchSize", 0)),
            browser=bool(data.get("browser")),
            no_local=bool(data.get("noLocal")),
            exclusive=bool(data.get("exclusive")),
            priority=int(data.get("priority", 0)),
            subscription_name=data.get("subscriptionName"),
        )
    if kind == "ProducerInfo":
        return ow.ProducerInfo(
            producer_id=_three_part(ow.ProducerId, data["producerId"]), destination=_advised(data["destination"])
        )
    if kind == "ConnectionInfo":
        return ow.ConnectionInfo(connection_id=ow.ConnectionId(data["connectionId"]), client_id=data.get("clientId"))
    if kind == "RemoveInfo":  # what it removes, by the advisory topic it is published on
        text = data["objectId"]
        removed: ow.DataStructure
        if topic.startswith("ActiveMQ.Advisory.Consumer."):
            removed = _three_part(ow.ConsumerId, text)
        elif topic.startswith("ActiveMQ.Advisory.Producer."):
            removed = _three_part(ow.ProducerId, text)
        else:
            removed = ow.ConnectionId(text)
        return ow.RemoveInfo(object_id=removed)
    if isinstance(kind, str) and kind.startswith("ActiveMQ"):  # a copy of an expired or dead-lettered message
        cls = _MESSAGE_CLASSES[kind]
        producer_id, seq = _split_message_id(data["messageId"])
        return cls(
            producer_id=producer_id,
            message_id=ow.MessageId(None, producer_id, seq),
            destination=_advised(data["destination"]),
            persistent=bool(data.get("persistent")),
            priority=int(data.get("priority", 4)),
        )
    if kind is None:
        return None
    raise ValueError(kind)


def _three_part(cls: Any, text: str) -> Any:
    """``ID:...:<session>:<value>`` as a ConsumerId or ProducerId."""
    connection, session, value = text.rsplit(":", 2)
    if cls is ow.ConsumerId:
        return ow.ConsumerId(connection, int(session), int(value))
    return ow.ProducerId(connection, int(value), int(session))


def _split_message_id(text: str) -> tuple[ow.ProducerId, int]:
    head, _, tail = text.rpartition(":")
    if head and tail.isdigit():
        return parse_producer_id(head), int(tail)
    return parse_producer_id(text), 0


def _advised(text: str) -> ow.ActiveMQDestination:
    for prefix, cls in _ADVISED:
        if text.startswith(prefix):
            return cls(text[len(prefix) :])
    raise ValueError(text)


_MESSAGE_CLASSES: dict[str, type[ow.Message]] = {
    "ActiveMQTextMessage": ow.TextMessage,
    "ActiveMQBytesMessage": ow.BytesMessage,
    "ActiveMQMapMessage": ow.MapMessage,
    "ActiveMQStreamMessage": ow.StreamMessage,
    "ActiveMQObjectMessage": ow.ObjectMessage,
}


_ADVISED: tuple[tuple[str, type[ow.ActiveMQDestination]], ...] = (
    ("temp-queue://", ow.ActiveMQTempQueue),
    ("temp-topic://", ow.ActiveMQTempTopic),
    ("queue://", ow.ActiveMQQueue),
    ("topic://", ow.ActiveMQTopic),
)


# -- both ways --------------------------------------------------------------------------------------------------------


def _ms(seconds: float) -> int:
    return round(seconds * 1000) if seconds else 0


def broker_message(command: ow.Message, cls: type[BrokerMessage] = BrokerMessage) -> BrokerMessage:
    """The message a producer sent, as the broker keeps it (its transaction is the caller's business); ``cls``, the
    broker's Message or a subclass of it."""
    message_id = command.message_id
    if message_id is None:
        raise OpenWireFormatError("a message without its MessageId")
    properties: Mapping[str, Any] = {}
    if command.marshalled_properties:
        properties = unmarshal_primitive_map(command.marshalled_properties) or {}
        for name, value in properties.items():
            if isinstance(value, (dict, list)):
                from .refusals import refuse_openwire

                raise refuse_openwire("openwire-nested-property", name)
    producer = message_id.producer_id or command.producer_id
    return cls(
        message_id=message_key(message_id),
        destination=broker_destination(command.destination),
        body=_body(command),
        properties=properties,
        priority=min(9, max(0, command.priority)),
        persistent=command.persistent,
        timestamp=command.timestamp / 1000.0,
        expiration=command.expiration / 1000.0 if command.expiration > 0 else 0.0,
        correlation_id=command.correlation_id,
        reply_to=None if command.reply_to is None else broker_destination(command.reply_to),
        type=command.type,
        group_id=command.group_id,
        group_seq=command.group_sequence,
        producer_id="" if producer is None else str(producer),
        producer_seq=message_id.producer_sequence_id,
        original_destination=None
        if command.original_destination is None
        else broker_destination(command.original_destination),
    )


def openwire_message(
    message: BrokerMessage,
    *,
    broker_seq: int = 0,
    redelivery_counter: int = 0,
    group_first: bool = False,
    is_temporary: Any = None,
    now_ms: int = 0,
) -> ow.Message:
    """The message command a consumer receives for ``message``; ``is_temporary(destination)`` says which
    destinations to write as temporary ones; ``now_ms`` is the dispatch time, ActiveMQ's ``brokerOutTime`` (and
    ``brokerInTime``: minibroker keeps no arrival time)."""

    def dest(destination: Destination | None) -> ow.ActiveMQDestination | None:
        if destination is None:
            return None
        return openwire_destination(destination, bool(is_temporary and is_temporary(destination)))

    advisory, data_structure = _advisory_data(message)
    if advisory:  # ActiveMQ's advisory: a bare message carrying the data structure
        cls: type[ow.Message] = ow.Message
        content: bytes | None = None
    else:
        cls, content = _content(message.body)
    message_id = _message_id(message, broker_seq)
    return cls(
        producer_id=message_id.producer_id,
        destination=dest(message.destination),
        original_destination=dest(message.original_destination),
        message_id=message_id,
        group_id=message.group_id,
        group_sequence=message.group_seq,
        correlation_id=message.correlation_id,
        persistent=message.persistent,
        expiration=_ms(message.expiration),
        priority=message.priority,
        reply_to=dest(message.reply_to),
        timestamp=_ms(message.timestamp),
        type=message.type,
        content=content,
        marshalled_properties=marshal_primitive_map(message.properties) if message.properties else None,
        data_structure=data_structure,
        redelivery_counter=redelivery_counter,
        jmsx_group_first_for_consumer=group_first,
        broker_in_time=now_ms,
        broker_out_time=now_ms,
    )
