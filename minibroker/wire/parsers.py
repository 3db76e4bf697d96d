"""Bytes of one frame to a frame object: one parser per frame type (``FrameParser.parse_*``, named by the rows of
:mod:`minibroker.wire.table`) and the field readers they share.

A parser gets one whole frame, from its type byte on, and checks every field: anything wrong raises
:class:`~minibroker.wire.errors.Malformed` (or a ``struct.error``/``UnicodeDecodeError`` from a truncated field),
which :class:`~minibroker.wire.decode.FrameDecoder` reports as a RemoteProtocolError naming the frame.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from .._core.commands import ConsumerInfo, MessageAck
from .._core.effects import Dispatch
from .._core.queue import QueueStatistics
from .._core.replay import BrokerInfo, CursorAck, PublishResult, QueuePosition, RangeEntry
from ..errors import MinibrokerError
from ..message import Body, Destination, Message, ObjectBody, PropertyValue
from . import layouts as _layouts
from .encoded import EncodedMessages
from .errors import Malformed
from .frames import (
    AckBelow,
    AddConsumer,
    Begin,
    BrokerInfoResult,
    BrowseResult,
    Connected,
    CursorAcked,
    Error,
    Frame,
    GetBrokerInfo,
    Hello,
    KeepAlive,
    Ok,
    Publish,
    Published,
    Pull,
    QueueList,
    QueueStatisticsResult,
    RangeResult,
    ReadRange,
    RemoveConsumer,
    Send,
)
from .layouts import (
    ACK_FIRST,
    ACK_POISON,
    ACK_TXN,
    ACK_TYPES,
    CI_BROWSER,
    CI_DURABLE,
    CI_EXCLUSIVE,
    CI_NO_LOCAL,
    CI_SELECTOR,
    DISPATCH_GROUP_FIRST,
    DISPATCH_MESSAGE,
    MSG,
    MSG_FLAGS,
    MSG_MAP,
    MSG_OBJECT,
    MSG_PERSISTENT,
    MSG_PROPERTIES,
    MSG_STREAM,
    MSG_TEXT,
    NONE,
    OPT_ALL,
    OPT_CORRELATION,
    OPT_GROUP,
    OPT_ORIGINAL,
    OPT_REPLY_TO,
    OPT_TYPE,
    RANGE_ENTRY,
    READ_RANGE_COLUMNAR,
    SEND_RECEIPT,
    SEND_TXN,
    U32,
)
from .values import read_properties

# The layouts called as ``NAME.pack(...)``/``NAME.unpack_from(...)`` are bound here by assignment, not imported:
# CPython 3.11 compiles a method call on an imported name as an attribute load plus a call, allocating a bound
# method on every call (for ``ACK.pack`` alone that is ~200 instructions of a ~6,000 instruction ACK frame).
ACK_BODY = _layouts.ACK_BODY
ADD_CONSUMER_BODY = _layouts.ADD_CONSUMER_BODY
BROKER_INFO_BODY = _layouts.BROKER_INFO_BODY
BROWSE_RESULT_BODY = _layouts.BROWSE_RESULT_BODY
CURSOR_ACKED_BODY = _layouts.CURSOR_ACKED_BODY
DISPATCH_BODY = _layouts.DISPATCH_BODY
ERROR_BODY = _layouts.ERROR_BODY
F64 = _layouts.F64
GET_BROKER_INFO_BODY = _layouts.GET_BROKER_INFO_BODY
I64 = _layouts.I64
POSITION = _layouts.POSITION
PUBLISH_BODY = _layouts.PUBLISH_BODY
PUBLISHED_BODY = _layouts.PUBLISHED_BODY
PULL_BODY = _layouts.PULL_BODY
QUEUE_LIST_BODY = _layouts.QUEUE_LIST_BODY
QUEUE_STATS_BODY = _layouts.QUEUE_STATS_BODY
RANGE_RESULT_BODY = _layouts.RANGE_RESULT_BODY
READ_RANGE_BODY = _layouts.READ_RANGE_BODY
REMOVE_CONSUMER_BODY = _layouts.REMOVE_CONSUMER_BODY
REQ_Q_BODY = _layouts.REQ_Q_BODY
SEND_BODY = _layouts.SEND_BODY
STATS = _layouts.STATS


#: a parser: the bytes of one frame (from its type byte on) to the frame
Parse = Callable[["FrameParser", bytes], Frame]

U32_UNPACK = U32.unpack_from
_MSG_UNPACK = MSG.unpack_from


def _typed_body(flags: int, raw: bytes) -> Body:
    """A Map-, Stream- or ObjectMessage's body from its bytes."""
    if flags & MSG_OBJECT:
        return ObjectBody(raw)
    values, used = read_properties(raw, 0)
    if used != len(raw):
        raise Malformed(f"a map or stream body of {len(raw)} bytes holds {used}")
    if flags & MSG_MAP:
        return MappingProxyType(values)
    if list(values) != [str(i) for i in range(len(values))]:
        raise Malformed("a stream body's positions are out of order")
    return tuple(values.values())


def read_str(frame: bytes, pos: int, what: str) -> tuple[str, int]:
    (n,) = U32_UNPACK(frame, pos)
    pos += 4
    end = pos + n
    if end > len(frame):
        raise Malformed(f"{what} is truncated: {n} bytes announced, {len(frame) - pos} left")
    return frame[pos:end].decode(), end


def read_ostr(frame: bytes, pos: int, what: str) -> tuple[str | None, int]:
    (n,) = U32_UNPACK(frame, pos)
    if n == NONE:
        return None, pos + 4
    pos += 4
    end = pos + n
    if end > len(frame):
        raise Malformed(f"{what} is truncated: {n} bytes announced, {len(frame) - pos} left")
    return frame[pos:end].decode(), end


def read_bool(value: int, what: str) -> bool:
    if value == 0:
        return False
    if value == 1:
        return True
    raise Malformed(f"{what} must be 0 or 1, not {value}")


def done(frame: bytes, pos: int) -> None:
    """Check that the last field ended the frame."""
    if pos != len(frame):
        raise Malformed(f"{len(frame) - pos} unexpected bytes after the last field")


def request_and_int(make: Callable[[int, int], Frame]) -> Parse:
    """The parser of a frame that is a request id and one 64-bit integer (COMMIT, ROLLBACK, CLOSE, PURGED,
    CONSUMER_ADDED): ``make(request_id, value)``."""
    end = 1 + REQ_Q_BODY.size

    def parse(_parser: FrameParser, frame: bytes) -> Frame:
        request_id, value = REQ_Q_BODY.unpack_from(frame, 1)
        done(frame, end)
        return make(request_id, value)

    return parse


def request_and_queue(make: Callable[[int, str], Frame]) -> Parse:
    """The parser of a frame that is a request id and a queue name (BROWSE, GET_QUEUE_STATISTICS, PURGE)."""

    def parse(_parser: FrameParser, frame: bytes) -> Frame:
        (request_id,) = U32_UNPACK(frame, 1)
        queue, pos = read_str(frame, 5, "queue name")
        done(frame, pos)
        return make(request_id, queue)

    return parse


def request_queue_and_text(make: Callable[[int, str, str], Frame]) -> Parse:
    """The parser of a frame that is a request id, a queue name and one more string (BROWSE_SELECTED)."""

    def parse(_parser: FrameParser, frame: bytes) -> Frame:
        (request_id,) = U32_UNPACK(frame, 1)
        queue, pos = read_str(frame, 5, "queue name")
        text, pos = read_str(frame, pos, "text")
        done(frame, pos)
        return make(request_id, queue, text)

    return parse


class FrameParser:
    """The parsers of every frame type, and what they remember across frames of one stream: destinations already
    parsed, and the last message's destination and producer (a stream mostly repeats them: no lookup, no decode)."""

    def __init__(self, encoded: EncodedMessages | None = None) -> None:
        self._destinations: dict[tuple[int, bytes], Destination] = {}
        self._last_dest: tuple[int, bytes, Destination | None] = (-1, b"", None)
        self._last_producer: tuple[bytes, str] = (b"", "")
        #: where to remember the encoding of each message decoded from a SEND frame
        self.encoded = encoded

    # -- field readers ----------------------------------------------------------------------------------------------

    def _destination(self, kind: int, raw: bytes) -> Destination:
        key = (kind, raw)
        dest = self._destinations.get(key)
        if dest is None:
            if kind > 1:
                raise Malformed(f"destination kind must be 0 (queue) or 1 (topic), not {kind}")
            name = raw.decode()
            try:
                dest = Destination.parse(("queue://" if kind == 0 else "topic://") + name)
            except MinibrokerError as exc:
                raise Malformed(str(exc)) from None
            if len(self._destinations) >= 4096:
                self._destinations.clear()
            self._destinations[key] = dest
        return dest

    def _read_dest(self, frame: bytes, pos: int, what: str) -> tuple[Destination, int]:
        kind = frame[pos]
        (n,) = U32_UNPACK(frame, pos + 1)
        pos += 5
        end = pos + n
        if end > len(frame):
            raise Malformed(f"{what} is truncated: {n} bytes announced, {len(frame) - pos} left")
        return self._destination(kind, frame[pos:end]), end

    def read_message(self, frame: bytes, pos: int) -> tuple[Message, int]:
        (flags, priority, kind, opt, timestamp, expiration, group_seq, producer_seq, n_id, n_dest, n_pid, n_body) = (
            _MSG_UNPACK(frame, pos)
        )
        pos += MSG.size
        end = pos + n_id + n_dest + n_pid + n_body
        if end > len(frame):
            raise Malformed(f"message is truncated: {end - pos} bytes announced, {len(frame) - pos} left")
        if flags & ~MSG_FLAGS or opt & ~OPT_ALL:
            raise Malformed(f"unknown message flags 0x{flags:02x}/0x{opt:02x}")
        if priority > 9:
            raise Malformed(f"message priority must be 0..9, not {priority}")
        a = pos + n_id
        message_id = frame[pos:a].decode()
        b = a + n_dest
        raw = frame[a:b]
        last_kind, last_raw, dest = self._last_dest
        if dest is None or raw != last_raw or kind != last_kind:
            dest = self._destination(kind, raw)
            self._last_dest = (kind, raw, dest)
        c = b + n_pid
        raw = frame[b:c]
        last_pid, producer_id = self._last_producer
        if raw != last_pid:
            producer_id = raw.decode()
            self._last_producer = (raw, producer_id)
        raw = frame[c:end]
        body: Body
        if flags & (MSG_MAP | MSG_STREAM | MSG_OBJECT):
            body = _typed_body(flags, raw)
        else:
            body = raw.decode() if flags & MSG_TEXT else raw
        pos = end
        correlation_id = type_ = group_id = None
        reply_to = original = None
        if opt:
            if opt & OPT_CORRELATION:
                correlation_id, pos = read_str(frame, pos, "correlation id")
            if opt & OPT_REPLY_TO:
                reply_to, pos = self._read_dest(frame, pos, "reply-to")
            if opt & OPT_TYPE:
                type_, pos = read_str(frame, pos, "message type")
            if opt & OPT_GROUP:
                group_id, pos = read_str(frame, pos, "group id")
            if opt & OPT_ORIGINAL:
                original, pos = self._read_dest(frame, pos, "original destination")
        properties: dict[str, PropertyValue]
        if flags & MSG_PROPERTIES:
            properties, pos = read_properties(frame, pos)
        else:
            properties = {}
        message = Message(
            message_id,
            dest,
            body,
            properties,
            priority,
            bool(flags & MSG_PERSISTENT),
            timestamp,
            expiration,
            correlation_id,
            reply_to,
            type_,
            group_id,
            group_seq,
            producer_id,
            producer_seq,
            original,
        )
        return message, pos

    # -- one parser per frame type (``frame`` starts with the type byte) --------------------------------------------

    def parse_send(self, frame: bytes) -> Send:
        request_id, flags, txn = SEND_BODY.unpack_from(frame, 1)
        if flags & ~3:
            raise Malformed(f"unknown SEND flags 0x{flags:02x}")
        message, pos = self.read_message(frame, SEND_BODY.size + 1)
        if pos != len(frame):
            done(frame, pos)
        if self.encoded is not None:
            self.encoded.put(message, frame[SEND_BODY.size + 1 :])
        return Send(request_id, message, txn if flags & SEND_TXN else None, bool(flags & SEND_RECEIPT))

    def parse_dispatch(self, frame: bytes) -> Dispatch:
        consumer_id, seq, counter, flags, broker_seq = DISPATCH_BODY.unpack_from(frame, 1)
        if flags & ~3:
            raise Malformed(f"unknown DISPATCH flags 0x{flags:02x}")
        message = None
        if flags & DISPATCH_MESSAGE:
            message, pos = self.read_message(frame, DISPATCH_BODY.size + 1)
            if pos != len(frame):
                done(frame, pos)
        elif len(frame) != DISPATCH_BODY.size + 1:
            done(frame, DISPATCH_BODY.size + 1)
        return Dispatch(consumer_id, message, seq, counter, bool(flags & DISPATCH_GROUP_FIRST), broker_seq)

    def parse_ack(self, frame: bytes) -> MessageAck:
        consumer_id, ack_type, flags, count, txn = ACK_BODY.unpack_from(frame, 1)
        if ack_type >= len(ACK_TYPES):
            raise Malformed(f"unknown ack type {ack_type}")
        if flags & ~7:
            raise Malformed(f"unknown ACK flags 0x{flags:02x}")
        last, pos = read_str(frame, ACK_BODY.size + 1, "last message id")
        first = cause = None
        if flags & ACK_FIRST:
            first, pos = read_str(frame, pos, "first message id")
        if flags & ACK_POISON:
            cause, pos = read_str(frame, pos, "poison cause")
        if pos != len(frame):
            done(frame, pos)
        return MessageAck(consumer_id, ACK_TYPES[ack_type], last, first, count, txn if flags & ACK_TXN else None, cause)

    def parse_hello(self, frame: bytes) -> Hello:
        (request_id,) = U32_UNPACK(frame, 1)
        client_id, pos = read_ostr(frame, 5, "client id")
        user = password = None
        if pos != len(frame):  # the optional credentials
            user, pos = read_ostr(frame, pos, "user")
            password, pos = read_ostr(frame, pos, "password")
        done(frame, pos)
        return Hello(request_id, client_id, user, password)

    def parse_connected(self, frame: bytes) -> Connected:
        request_id, connection_id = REQ_Q_BODY.unpack_from(frame, 1)
        name, pos = read_str(frame, 1 + REQ_Q_BODY.size, "broker name")
        done(frame, pos)
        return Connected(request_id, connection_id, name)

    def parse_add_consumer(self, frame: bytes) -> AddConsumer:
        request_id, prefetch, priority, session_id, flags, kind = ADD_CONSUMER_BODY.unpack_from(frame, 1)
        if flags & ~31:
            raise Malformed(f"unknown ADD_CONSUMER flags 0x{flags:02x}")
        (n,) = U32_UNPACK(frame, 1 + ADD_CONSUMER_BODY.size)
        pos = 5 + ADD_CONSUMER_BODY.size
        end = pos + n
        if end > len(frame):
            raise Malformed(f"destination is truncated: {n} bytes announced, {len(frame) - pos} left")
        dest = self._destination(kind, frame[pos:end])
        selector = None
        if flags & CI_SELECTOR:
            selector, end = read_str(frame, end, "selector")
        subscription_name = None
        if flags & CI_DURABLE:
            subscription_name, end = read_str(frame, end, "subscription name")
        done(frame, end)
        info = ConsumerInfo(
            dest,
            prefetch,
            selector,
            priority,
            bool(flags & CI_EXCLUSIVE),
            bool(flags & CI_BROWSER),
            bool(flags & CI_NO_LOCAL),
            session_id,
            subscription_name,
        )
        return AddConsumer(request_id, info)

    def parse_remove_consumer(self, frame: bytes) -> RemoveConsumer:
        request_id, consumer_id, last = REMOVE_CONSUMER_BODY.unpack_from(frame, 1)
        done(frame, 1 + REMOVE_CONSUMER_BODY.size)
        return RemoveConsumer(request_id, consumer_id, last)

    def parse_ok(self, frame: bytes) -> Ok:
        (request_id,) = U32_UNPACK(frame, 1)
        done(frame, 5)
        return Ok(request_id)

    def parse_error(self, frame: bytes) -> Error:
        request_id, fatal = ERROR_BODY.unpack_from(frame, 1)
        code, pos = read_str(frame, 1 + ERROR_BODY.size, "error code")
        message, pos = read_str(frame, pos, "error message")
        done(frame, pos)
        return Error(request_id, code, message, read_bool(fatal, "the fatal flag"))

    def parse_pull(self, frame: bytes) -> Pull:
        consumer_id, timeout = PULL_BODY.unpack_from(frame, 1)
        done(frame, 1 + PULL_BODY.size)
        return Pull(consumer_id, timeout)

    def parse_begin(self, frame: bytes) -> Begin:
        (txn,) = I64.unpack_from(frame, 1)
        done(frame, 9)
        return Begin(txn)

    def parse_keep_alive(self, frame: bytes) -> KeepAlive:
        (request_id,) = U32_UNPACK(frame, 1)
        done(frame, 5)
        return KeepAlive(request_id)

    def parse_browse_result(self, frame: bytes) -> BrowseResult:
        request_id, last, count = BROWSE_RESULT_BODY.unpack_from(frame, 1)
        pos = 1 + BROWSE_RESULT_BODY.size
        if count * MSG.size > len(frame) - pos:
            raise Malformed(f"{count} messages announced, {len(frame) - pos} bytes left")
        messages = []
        for _ in range(count):
            message, pos = self.read_message(frame, pos)
            messages.append(message)
        done(frame, pos)
        return BrowseResult(request_id, tuple(messages), read_bool(last, "the last flag"))

    def parse_queue_statistics(self, frame: bytes) -> QueueStatisticsResult:
        request_id, present = QUEUE_STATS_BODY.unpack_from(frame, 1)
        pos = 1 + QUEUE_STATS_BODY.size
        stats = None
        if read_bool(present, "the present flag"):
            stats, pos = read_stats(frame, pos)
        done(frame, pos)
        return QueueStatisticsResult(request_id, stats)

    def parse_queue_list(self, frame: bytes) -> QueueList:
        request_id, count = QUEUE_LIST_BODY.unpack_from(frame, 1)
        pos = 1 + QUEUE_LIST_BODY.size
        if count * (4 + STATS.size) > len(frame) - pos:
            raise Malformed(f"{count} queues announced, {len(frame) - pos} bytes left")
        queues = []
        for _ in range(count):
            stats, pos = read_stats(frame, pos)
            queues.append(stats)
        done(frame, pos)
        return QueueList(request_id, tuple(queues))

    # -- replayable reads -------------------------------------------------------------------------------------------

    def parse_read_range(self, frame: bytes) -> ReadRange:
        request_id, from_seq, to_seq, limit, flags = READ_RANGE_BODY.unpack_from(frame, 1)
        if from_seq < 0 or to_seq < -1 or limit < -1:
            raise Malformed(f"negative range bounds: from {from_seq}, to {to_seq}, limit {limit}")
        if flags & ~READ_RANGE_COLUMNAR:
            raise Malformed(f"unknown READ_RANGE flags 0x{flags:02x}")
        queue, pos = read_str(frame, 1 + READ_RANGE_BODY.size, "queue name")
        epoch, pos = read_ostr(frame, pos, "epoch")
        done(frame, pos)
        return ReadRange(
            request_id,
            queue,
            from_seq,
            None if to_seq == -1 else to_seq,
            None if limit == -1 else limit,
            epoch,
            bool(flags & READ_RANGE_COLUMNAR),
        )

    def parse_range_result(self, frame: bytes) -> RangeResult:
        request_id, last, next_seq, count = RANGE_RESULT_BODY.unpack_from(frame, 1)
        epoch, pos = read_str(frame, 1 + RANGE_RESULT_BODY.size, "epoch")
        if count * (RANGE_ENTRY.size + MSG.size) > len(frame) - pos:
            raise Malformed(f"{count} entries announced, {len(frame) - pos} bytes left")
        entries = []
        unpack = RANGE_ENTRY.unpack_from
        read_message = self.read_message
        for _ in range(count):
            seq, counter = unpack(frame, pos)
            message, pos = read_message(frame, pos + 16)
            entries.append(RangeEntry(seq, message, counter))
        done(frame, pos)
        return RangeResult(request_id, epoch, next_seq, tuple(entries), read_bool(last, "the last flag"))

    def parse_ack_below(self, frame: bytes) -> AckBelow:
        request_id, seq = REQ_Q_BODY.unpack_from(frame, 1)
        queue, pos = read_str(frame, 1 + REQ_Q_BODY.size, "queue name")
        cursor, pos = read_str(frame, pos, "cursor name")
        epoch, pos = read_ostr(frame, pos, "epoch")
        done(frame, pos)
        return AckBelow(request_id, queue, cursor, seq, epoch)

    def parse_cursor_acked(self, frame: bytes) -> CursorAcked:
        request_id, floor, removed, skipped, next_seq = CURSOR_ACKED_BODY.unpack_from(frame, 1)
        epoch, pos = read_str(frame, 1 + CURSOR_ACKED_BODY.size, "epoch")
        queue, pos = read_str(frame, pos, "queue name")
        cursor, pos = read_str(frame, pos, "cursor name")
        done(frame, pos)
        return CursorAcked(request_id, CursorAck(epoch, queue, cursor, floor, removed, skipped, next_seq))

    def parse_get_broker_info(self, frame: bytes) -> GetBrokerInfo:
        request_id, flags = GET_BROKER_INFO_BODY.unpack_from(frame, 1)
        if flags & ~1:
            raise Malformed(f"unknown GET_BROKER_INFO flags 0x{flags:02x}")
        cursor, pos = read_ostr(frame, 1 + GET_BROKER_INFO_BODY.size, "cursor name")
        queues: tuple[str, ...] | None = None
        if flags & 1:
            (count,) = U32_UNPACK(frame, pos)
            pos += 4
            if count * 4 > len(frame) - pos:
                raise Malformed(f"{count} queue names announced, {len(frame) - pos} bytes left")
            names = []
            for _ in range(count):
                name, pos = read_str(frame, pos, "queue name")
                names.append(name)
            queues = tuple(names)
        done(frame, pos)
        return GetBrokerInfo(request_id, queues, cursor)

    def parse_broker_info(self, frame: bytes) -> BrokerInfoResult:
        request_id, count = BROKER_INFO_BODY.unpack_from(frame, 1)
        epoch, pos = read_str(frame, 1 + BROKER_INFO_BODY.size, "epoch")
        name, pos = read_str(frame, pos, "broker name")
        if count * (4 + POSITION.size) > len(frame) - pos:
            raise Malformed(f"{count} queues announced, {len(frame) - pos} bytes left")
        queues = []
        for _ in range(count):
            queue, pos = read_str(frame, pos, "queue name")
            first, next_seq, size, floor = POSITION.unpack_from(frame, pos)
            pos += POSITION.size
            queues.append(QueuePosition(queue, first, next_seq, size, None if floor == -1 else floor))
        done(frame, pos)
        return BrokerInfoResult(request_id, BrokerInfo(epoch, name, tuple(queues)))

    def parse_publish(self, frame: bytes) -> Publish:
        request_id, flags, count = PUBLISH_BODY.unpack_from(frame, 1)
        if flags & ~1:
            raise Malformed(f"unknown PUBLISH flags 0x{flags:02x}")
        pos = 1 + PUBLISH_BODY.size
        if count * MSG.size > len(frame) - pos:
            raise Malformed(f"{count} messages announced, {len(frame) - pos} bytes left")
        messages = []
        for _ in range(count):
            message, pos = self.read_message(frame, pos)
            messages.append(message)
        done(frame, pos)
        return Publish(request_id, tuple(messages), bool(flags & 1))

    def parse_published(self, frame: bytes) -> Published:
        request_id, accepted, duplicates = PUBLISHED_BODY.unpack_from(frame, 1)
        done(frame, 1 + PUBLISHED_BODY.size)
        return Published(request_id, PublishResult(accepted, duplicates))


def read_stats(frame: bytes, pos: int) -> tuple[QueueStatistics, int]:
    name, pos = read_str(frame, pos, "queue name")
    values = STATS.unpack_from(frame, pos)
    return QueueStatistics(name, *values), pos + STATS.size
