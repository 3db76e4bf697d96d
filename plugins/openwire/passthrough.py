"""A message that came in as OpenWire goes out as OpenWire with the bytes it came in with (issue 45).

ActiveMQ's broker keeps a message marshalled and dispatches it without building it again; this module does the same
for the common shape of a JMS producer's message. When a BytesMessage or TextMessage frame is read, :func:`wire_of`
checks, from the decoded command and its payload, that the reference path (:func:`.messages.broker_message`, then
:func:`.messages.openwire_message` and the codec) would write its fields back byte for byte: ids whose text parses
back to the same ids, a queue or topic (not temporary), no reply-to, original destination, properties, compression,
user id or broker path, times that survive milliseconds -> seconds -> milliseconds, ASCII strings. Such a message is
kept as a :class:`WireMessage`, the broker's :class:`~minibroker.message.Message` with the unchanged byte runs of
its frame beside it (ids, destination, headers; the body stays the message's own). A dispatch of it
(:func:`dispatch_frame`) joins those runs with what the broker sets per dispatch: the consumer, the broker sequence,
the redelivery counter, the broker-in/out times and JMSXGroupFirstForConsumer, and writes ``command_id`` 0 and no
transaction, as the reference does.

The runs can never go stale: the broker treats a sent message as immutable and copies it with ``attrs.evolve`` to
change it (dead-lettering, composites, virtual topics, the scheduler), and a copy does not carry ``wire`` (an
``init=False`` field). Other edges read a WireMessage's fields as any message's, at no extra cost.
``tests/plugins/openwire/test_passthrough.py`` checks the frames against the reference path's.
"""

from __future__ import annotations

import struct
from typing import Final

import attrs

from minibroker import Dispatch
from minibroker.message import Message as BrokerMessage

from . import commands as ow
from .codec import _INT_FROM, _INT_PACK, _LONG_PACK, _USHORT_FROM, encode_command
from .messages import broker_message, parse_producer_id

__all__ = ["WireMessage", "consumer_prefix", "dispatch_frame", "wire_message", "wire_of"]

#: what a dispatch reuses of a message frame: the MessageDispatch's destination field; the message from its type
#: byte to its id's broker sequence; the headers from original_transaction_id to the body's field; a TextMessage?
Wire = tuple[bytes, bytes, bytes, bool]


@attrs.define(slots=True, eq=False)
class WireMessage(BrokerMessage):
    """A message as the broker keeps it, with the byte runs of the OpenWire frame it came in (``attrs.evolve``
    leaves them behind: a changed copy is written the reference way)."""

    wire: Wire | None = attrs.field(default=None, init=False, repr=False)


_TEXT_CONTENT = struct.Struct(">Bii").pack
_BYTES_CONTENT = struct.Struct(">Bi").pack
#: the dispatched message's last fields and the MessageDispatch's: redeliveryCounter, then brokerPath, arrival,
#: userID, receivedByDFBridge, droppable and cluster all absent (13 zero bytes), brokerInTime, brokerOutTime,
#: jmsXGroupFirstForConsumer; then the MessageDispatch's redeliveryCounter
_TAIL = struct.Struct(">i13xqq?i")
_TAIL_SIZE: Final = _TAIL.size
_EMPTY_TAIL: Final = bytes(13)
_BYTES_TYPE: Final = ow.BytesMessage.TYPE
_TEXT_TYPE: Final = ow.TextMessage.TYPE
_QUEUE_OR_TOPIC: Final = (ow.ActiveMQQueue.TYPE, ow.ActiveMQTopic.TYPE)
#: ids and destinations already checked to write back as they came (by their bytes); cleared when full
_CHECKED: dict[bytes, bool] = {}
_CHECKED_MAX: Final = 4096


def _string_end(data: bytes, pos: int) -> int:
    return pos + 3 + _USHORT_FROM(data, pos + 1)[0] if data[pos] else pos + 1


def _plain(text: str | None) -> bool:
    """Written back as it was read: Java's modified UTF-8 of ASCII without NUL is the ASCII itself."""
    return text is None or (text.isascii() and "\0" not in text)


def _written(text: str | None) -> int:
    return 1 if text is None else 3 + len(text)


def _ms_survives(value: int) -> bool:
    """``value`` ms -> seconds -> ms gives ``value`` back (what broker_message and openwire_message do)."""
    return value == 0 or (value > 0 and round(value / 1000.0 * 1000) == value)


def _ids_write_back(command: ow.Message, run: bytes) -> bool:
    """Would the reference path write this producer id and destination as ``run`` (their bytes as read)?"""
    producer = command.producer_id
    destination = command.destination
    if producer is None or destination is None or not destination.physical_name:
        return False
    if parse_producer_id(str(producer)) != producer:
        return False
    # broker_destination then openwire_destination: a name ActiveMQ writes with a prefix, or a composite, differs
    from .messages import broker_destination, openwire_destination

    try:
        if openwire_destination(broker_destination(destination)) != destination:
            return False
    except Exception:  # refused later by the reference path, which then reports it
        return False
    return _nested(producer, destination) == run


def _nested(*values: ow.DataStructure) -> bytes:
    return b"".join(b"\x01" + encode_command(value)[4:] for value in values)


def wire_of(command: ow.Message, data: bytes) -> Wire | None:
    """The runs of ``data`` (the frame's payload from its type byte) a dispatch of ``command`` can reuse, or None
    when the reference path would write any of them differently."""
    kind = data[0]
    if (kind != _BYTES_TYPE and kind != _TEXT_TYPE) or command.compressed or command.reply_to is not None:
        return None
    if command.original_destination is not None or command.marshalled_properties is not None:
        return None
    if command.type == "Advisory" or not (_plain(command.group_id) and _plain(command.correlation_id)):
        return None
    if not (_plain(command.type) and 0 <= command.priority <= 9 and _ms_survives(command.timestamp)):
        return None
    if not _ms_survives(command.expiration):
        return None
    content = command.content
    if content is None:
        return None
    if kind == _TEXT_TYPE:
        if len(content) < 4 or _INT_FROM(content, 0)[0] != len(content) - 4:
            return None
        text = content[4:]
        if not text.isascii() or b"\0" in text:
            return None
    try:
        # producer id, destination
        if data[6] != 1 or data[7] != ow.ProducerId.TYPE:
            return None
        p1 = _string_end(data, 8) + 16
        if data[p1] != 1 or data[p1 + 1] not in _QUEUE_OR_TOPIC:
            return None
        p2 = _string_end(data, p1 + 2)
        ids = data[6:p2]
        checked = _CHECKED.get(ids)
        if checked is None:
            if len(_CHECKED) >= _CHECKED_MAX:
                _CHECKED.clear()
            checked = _CHECKED[ids] = _ids_write_back(command, ids)
        if not checked:
            return None
        # the transaction (not dispatched), then no original destination
        p3 = p2 + 1
        if data[p2]:
            if data[p2 + 1] != ow.LocalTransactionId.TYPE:
                return None
            p3 = p2 + 10
            p3 = _string_end(data, p3 + 2) if data[p3] else p3 + 1
        if data[p3] != 0:
            return None
        # the message id: no text view, the producer id as above, its sequence (the broker's is dispatched)
        p4 = p3 + 1
        producer_end = p4 + 3 + (p1 - 6)
        if data[p4] != 1 or data[p4 + 1] != ow.MessageId.TYPE or data[p4 + 2] != 0:
            return None
        if data[p4 + 3 : producer_end] != data[6:p1]:
            return None
        p5 = producer_end + 16
        if data[p5] != 0:  # original transaction id
            return None
        # groupID, groupSequence, correlationId, persistent, expiration, priority, replyTo (none), timestamp, type
        p6 = _string_end(data, p5 + 1) + 4
        p6 = _string_end(data, p6)
        if data[p6] > 1:
            return None
        p6 = _string_end(data, p6 + 1 + 8 + 1 + 1 + 8)
        # each string as many bytes as characters: ASCII as written, never a longer form of it
        if p6 != p5 + 24 + _written(command.group_id) + _written(command.correlation_id) + _written(command.type):
            return None
        # content, then no properties, data structure or target consumer, not compressed; the tail as written
        end = p6 + 5 + len(content)
        if data[end : end + 4] != b"\0\0\0\0" or data[end + 8 : end + 21] != _EMPTY_TAIL or end + 38 != len(data):
            return None
    except IndexError:
        return None
    return (
        data[p1:p2],
        b"\x01" + data[0:1] + b"\0\0\0\0\0" + ids + b"\0\0" + data[p4 : p5 - 8],
        data[p5:p6],
        kind == _TEXT_TYPE,
    )


def consumer_prefix(consumer_id: ow.ConsumerId) -> bytes:
    """A MessageDispatch to ``consumer_id`` up to its destination: type, command id 0, no response, the consumer."""
    return b"\x15\0\0\0\0\0" + _nested(consumer_id)


def wire_message(command: ow.Message, wire: Wire) -> WireMessage:
    """The broker's message for ``command`` (:func:`.messages.broker_message`) with its frame's runs."""
    message = broker_message(command, WireMessage)
    assert isinstance(message, WireMessage)
    message.wire = wire
    return message


def dispatch_frame(message: WireMessage, prefix: bytes, dispatch: Dispatch, now_ms: int) -> bytes | None:
    """The MessageDispatch frame of ``dispatch`` (what encoding :func:`.messages.openwire_message`'s command in a
    MessageDispatch writes), from its message's frame runs (None: a copy without them); ``prefix`` is
    :func:`consumer_prefix`'s."""
    wire = message.wire
    if wire is None:
        return None
    counter = dispatch.redelivery_counter
    destination, head, headers, text = wire
    body = message.body
    if text:
        assert isinstance(body, str)
        raw = body.encode("ascii")
        content = _TEXT_CONTENT(1, len(raw) + 4, len(raw))
    else:
        assert isinstance(body, bytes)
        raw = body
        content = _BYTES_CONTENT(1, len(raw))
    parts = (
        prefix,
        destination,
        head,
        _LONG_PACK(dispatch.broker_seq),
        headers,
        content,
        raw,
        b"\0\0\0\0",
        _TAIL.pack(counter, now_ms, now_ms, dispatch.group_first, counter),
    )
    size = len(prefix) + len(destination) + len(head) + 8 + len(headers) + len(content) + len(raw) + 4 + _TAIL_SIZE
    return _INT_PACK(size) + b"".join(parts)
