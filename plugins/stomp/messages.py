"""Messages in and out of STOMP: the Message a SEND carries, and the MESSAGE frame a dispatch becomes, both as
ActiveMQ 5.17's converter writes them (header names, Java number formats, which properties survive).

A MESSAGE is usually encoded straight to bytes (:func:`message_bytes`, about 4x cheaper than building a header
dict for :func:`~minibroker.plugins.stomp.codec.encode_frame`); :func:`message_frame` is the reference it is checked
against, and the path taken whenever a header needs more care (STOMP 1.0, a property named like a header, a NUL).
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from minibroker._java.utf8 import java_utf8
from minibroker.errors import InvalidDestination
from minibroker.message import Destination, Message, PropertyValue

from .codec import StompFrame, can_encode_header
from .naming import DestinationNames
from .values import (
    JAVA_WS,
    LONG,
    StompError,
    escape_value,
    java_string,
    parse_int_option,
    parse_long,
    parse_priority,
)

__all__ = [
    "MESSAGE_HEADERS",
    "message_bytes",
    "message_frame",
    "message_from_send",
    "sanitized",
]

#: SEND headers that are not copied into message properties
SEND_CONSUMED: Final = frozenset(
    {
        "destination",
        "transaction",
        "receipt",
        "content-length",
        "message-id",
        "redelivered",
        "subscription",
        "JMSXUserID",
        "JMSXDeliveryCount",
        "persistent",
        "priority",
        "expires",
        "timestamp",
        "correlation-id",
        "type",
        "reply-to",
        "amq-msg-type",
        "JMSXGroupID",
        "JMSXGroupSeq",
    }
)
#: SEND headers that are more than a property or the destination (the rest of SEND_CONSUMED is read as it comes)
SEND_SPECIAL: Final = frozenset(
    {
        "amq-msg-type",
        "priority",
        "expires",
        "timestamp",
        "reply-to",
        "JMSXGroupSeq",
        "persistent",
        "correlation-id",
        "type",
        "JMSXGroupID",
    }
)
#: Message's fields in the order message_from_send passes them
MESSAGE_FIELDS: Final = (
    "message_id",
    "destination",
    "body",
    "properties",
    "priority",
    "persistent",
    "timestamp",
    "expiration",
    "correlation_id",
    "reply_to",
    "type",
    "group_id",
    "group_seq",
    "producer_id",
    "producer_seq",
)
if tuple(field.name for field in attrs.fields(Message))[: len(MESSAGE_FIELDS)] != MESSAGE_FIELDS:
    raise ImportError("minibroker.message.Message changed its field order: update minibroker.plugins.stomp.messages")
#: the headers of a MESSAGE besides its properties: a property of one of these names replaces it (the frame path)
MESSAGE_HEADERS: Final = frozenset(
    {
        "message-id",
        "destination",
        "correlation-id",
        "expires",
        "redelivered",
        "priority",
        "reply-to",
        "timestamp",
        "type",
        "original-destination",
        "persistent",
        "subscription",
        "ack",
        "content-length",
    }
)
#: scheduler properties ActiveMQ reads as numbers even when a STOMP client sent them as strings
SCHEDULER_PROPERTIES: Final = frozenset({"AMQ_SCHEDULED_DELAY", "AMQ_SCHEDULED_PERIOD", "AMQ_SCHEDULED_REPEAT"})


def message_from_send(
    frame: StompFrame, destination: Destination, names: DestinationNames, now: float, producer: str, seq: int
) -> Message:
    """The message a SEND carries (``seq``: its number among the connection's messages), as ActiveMQ converts it."""
    headers = frame.headers
    priority = 4
    expiration = 0.0
    timestamp = now
    properties: dict[str, PropertyValue] = {}
    reply_to: Destination | None = None
    group_seq = 0
    persistent = False
    correlation_id = message_type = group_id = None
    is_text = "content-length" not in headers
    if not SEND_SPECIAL.isdisjoint(headers):  # anything beyond destination, content-length and properties
        kind = headers.get("amq-msg-type")
        if kind is not None:
            if kind not in ("text", "bytes"):
                raise StompError(f"Unsupported message type '{kind}'")
            is_text = kind == "text"
        if (value := headers.get("priority")) is not None:
            priority = parse_priority(value)
        if (value := headers.get("expires")) is not None:
            expires = parse_long(value)
            expiration = expires / 1000.0 if expires > 0 else 0.0
        if (value := headers.get("timestamp")) is not None:
            timestamp = parse_long(value) / 1000.0
        if (value := headers.get("reply-to")) is not None:
            try:
                reply_to = names.parse_one(value.strip(JAVA_WS), fallback=False)
            except (StompError, InvalidDestination):
                properties["reply-to"] = value
        if (value := headers.get("JMSXGroupSeq")) is not None:
            parsed = parse_int_option(value)
            group_seq = parsed if parsed is not None else 0
        persistent = headers.get("persistent") == "true"
        correlation_id = headers.get("correlation-id")
        message_type = headers.get("type")
        group_id = headers.get("JMSXGroupID")
    body: str | bytes = frame.body.decode("utf-8", "replace") if is_text else frame.body
    for name, value in headers.items():
        if name in SEND_CONSUMED:
            continue
        if name in SCHEDULER_PROPERTIES and LONG.fullmatch(value.strip(JAVA_WS)):
            properties[name] = int(value.strip(JAVA_WS))
        else:
            properties[name] = value
    # positional: the field order is checked at import (_MESSAGE_FIELDS); keywords cost ~0.4 us more per send
    return Message(
        f"{producer}:{seq}",
        destination,
        body,
        properties,
        priority,
        persistent,
        timestamp,
        expiration,
        correlation_id,
        reply_to,
        message_type,
        group_id,
        group_seq,
        producer,
        seq,
    )


def message_bytes(
    names: DestinationNames,
    version: str,
    id_line: str | None,
    message: Message,
    redelivery_counter: int,
    ack_id: str | None,
) -> bytes | None:
    """The MESSAGE frame :func:`message_frame` makes, encoded at once (the usual case, about 4x cheaper than a
    header dict and :func:`encode_frame`); None when it takes the frame path: STOMP 1.0, a property named like
    one of the frame's own headers (it would replace that header in place), or a value that cannot be written as
    it is (a NUL: the frame path writes it sanitized). Checked against the frame path in the tests."""
    properties = message.properties
    if version == "1.0" or id_line is None or (properties and not MESSAGE_HEADERS.isdisjoint(properties)):
        return None
    message_id = escape_value(message.message_id, version)
    if message_id is None:
        return None
    name = names.escaped_name(message.destination, version)
    if name is None:
        return None
    body = message.body
    if (
        type(body) is bytes
        and not properties
        and not redelivery_counter
        and not message.persistent
        and message.correlation_id is None
        and message.reply_to is None
        and message.type is None
        and message.original_destination is None
    ):  # the plainest MESSAGE (no optional header): one f-string
        expiration = message.expiration
        ack_line = "" if ack_id is None else "\nack:" + ack_id
        head = (
            f"MESSAGE\nmessage-id:{message_id}\ndestination:{name}"
            f"\nexpires:{round(expiration * 1000) if expiration else 0}\npriority:{message.priority}"
            f"\ntimestamp:{round(message.timestamp * 1000)}{id_line}{ack_line}\ncontent-length:{len(body)}\n\n"
        )
        try:
            return b"".join((head.encode("utf-8"), body, b"\0\n"))
        except UnicodeEncodeError:  # a lone surrogate: "?", as Java's String.getBytes(UTF_8) writes it
            return b"".join((java_utf8(head), body, b"\0\n"))
    parts = ["MESSAGE\nmessage-id:", message_id, "\ndestination:", name]
    if message.correlation_id is not None:
        text = escape_value(message.correlation_id, version)
        if text is None:
            return None
        parts += ("\ncorrelation-id:", text)
    expiration = message.expiration
    parts += ("\nexpires:", str(int(round(expiration * 1000))) if expiration else "0")
    if redelivery_counter > 0:
        parts.append("\nredelivered:true")
    parts += ("\npriority:", str(message.priority))
    if message.reply_to is not None:
        text = escape_value(names.stomp_name(message.reply_to), version)
        if text is None:
            return None
        parts += ("\nreply-to:", text)
    parts += ("\ntimestamp:", str(int(round(message.timestamp * 1000))))
    if message.type is not None:
        text = escape_value(message.type, version)
        if text is None:
            return None
        parts += ("\ntype:", text)
    if message.original_destination is not None:
        text = escape_value(names.stomp_name(message.original_destination), version)
        if text is None:
            return None
        parts += ("\noriginal-destination:", text)
    if message.persistent:
        parts.append("\npersistent:true")
    if properties:
        for key, value in properties.items():
            text = value if type(value) is str else java_string(value)
            if text is None:
                continue
            escaped_key = escape_value(key, version)
            escaped_text = escape_value(text, version)
            if escaped_key is not None and escaped_text is not None:  # else: dropped, as can_encode_header says
                parts += ("\n", escaped_key, ":", escaped_text)
    parts.append(id_line)
    if ack_id is not None:
        parts += ("\nack:", ack_id)  # digits
    if isinstance(body, str):
        data = java_utf8(body)
        if b"\0" in data:
            parts += ("\ncontent-length:", str(len(data)))
    elif isinstance(body, bytes):
        data = body
        parts += ("\ncontent-length:", str(len(data)))
    else:
        data = b""  # a Map-, Stream- or ObjectMessage: ActiveMQ's default translation sends no body
    parts.append("\n\n")
    return b"".join((java_utf8("".join(parts)), data, b"\0\n"))


def message_frame(
    names: DestinationNames,
    version: str,
    header_id: str | None,
    message: Message,
    redelivery_counter: int,
    ack_id: str | None,
) -> StompFrame:
    """A MESSAGE as ActiveMQ writes it: its headers, the properties that can be written, the subscription's id."""
    destination = message.destination
    headers: dict[str, str] = {
        "message-id": message.message_id,
        "destination": names.stomp_names.get(destination) or names.stomp_name(destination),
    }
    if message.correlation_id is not None:
        headers["correlation-id"] = message.correlation_id
    expiration = message.expiration
    headers["expires"] = str(int(round(expiration * 1000))) if expiration else "0"
    if redelivery_counter > 0:
        headers["redelivered"] = "true"
    headers["priority"] = str(message.priority)
    if message.reply_to is not None:
        headers["reply-to"] = names.stomp_name(message.reply_to)
    headers["timestamp"] = str(int(round(message.timestamp * 1000)))
    if message.type is not None:
        headers["type"] = message.type
    if message.original_destination is not None:
        headers["original-destination"] = names.stomp_name(message.original_destination)
    if message.persistent:
        headers["persistent"] = "true"
    properties = message.properties
    if properties:
        for name, value in properties.items():
            text = value if type(value) is str else java_string(value)
            if text is not None and can_encode_header(name, text, version):
                headers[name] = text
    if header_id is not None:
        headers["subscription"] = header_id
    if ack_id is not None:
        headers["ack"] = ack_id
    body = message.body
    if isinstance(body, str):
        data = java_utf8(body)
        if b"\0" in data:
            # a text body holding NUL would end the frame early: counted, unlike ActiveMQ (which corrupts it)
            headers["content-length"] = str(len(data))
        else:
            headers.pop("content-length", None)
    elif isinstance(body, bytes):
        data = body
        headers["content-length"] = str(len(data))
    else:
        data = b""  # a Map-, Stream- or ObjectMessage: ActiveMQ's default translation sends no body
        headers.pop("content-length", None)
    return StompFrame("MESSAGE", headers, data)


def sanitized(frame: StompFrame, version: str) -> StompFrame:
    """A frame whose headers were refused by the encoder, made writable (control characters replaced)."""
    headers: dict[str, str] = {}
    for name, value in frame.headers.items():
        if not can_encode_header(name, value, version):
            name = re.sub(r"[\0\r\n:]", "_", name) if version == "1.0" else name.replace("\0", "_")
            value = re.sub(r"[\0\r\n]", " ", value) if version == "1.0" else value.replace("\0", " ")
        headers.setdefault(name, value)
    body = frame.body
    if b"\0" in body and "content-length" not in headers:
        headers["content-length"] = str(len(body))
    return StompFrame(frame.command, headers, body)
