"""Frames to bytes: one ``encode_*`` function per frame type, taking the frame's fields (the fast path: no frame
object is built on the way out), and the field writers they share.

Each writer appends to a list of parts and returns the bytes it added, so that an encoder packs its fixed head
(:mod:`~minibroker.wire.layouts`) with the final length last and joins once. A value the protocol cannot carry
raises :class:`~minibroker.errors.LocalProtocolError`. :func:`minibroker.wire.encode` encodes any frame object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .._core.commands import ConsumerInfo, MessageAck
from .._core.effects import Dispatch
from .._core.queue import QueueStatistics
from .._java.utf8 import java_text_message, java_utf8
from ..errors import LocalProtocolError
from ..message import Destination, Message, ObjectBody
from . import layouts as _layouts
from .encoded import EncodedMessages
from .errors import ENCODE_FAILURES, cannot_encode
from .frames import MAGIC, PROTOCOL_VERSION, FrameType
from .layouts import (
    ACK_FIRST,
    ACK_POISON,
    ACK_TXN,
    CI_BROWSER,
    CI_DURABLE,
    CI_EXCLUSIVE,
    CI_NO_LOCAL,
    CI_SELECTOR,
    DISPATCH_GROUP_FIRST,
    DISPATCH_MESSAGE,
    MSG_MAP,
    MSG_OBJECT,
    MSG_PERSISTENT,
    MSG_PROPERTIES,
    MSG_STREAM,
    MSG_TEXT,
    NONE_BYTES,
    OPT_CORRELATION,
    OPT_GROUP,
    OPT_ORIGINAL,
    OPT_REPLY_TO,
    OPT_TYPE,
    QUEUE,
    SEND_RECEIPT,
    SEND_TXN,
)
from .values import write_properties

# The layouts called as ``NAME.pack(...)``/``NAME.unpack_from(...)`` are bound here by assignment, not imported:
# CPython 3.11 compiles a method call on an imported name as an attribute load plus a call, allocating a bound
# method on every call (for ``ACK.pack`` alone that is ~200 instructions of a ~6,000 instruction ACK frame).
ACK = _layouts.ACK
ADD_CONSUMER = _layouts.ADD_CONSUMER
BEGIN = _layouts.BEGIN
BROWSE_RESULT = _layouts.BROWSE_RESULT
CONNECTED = _layouts.CONNECTED
CONSUMER_ADDED = _layouts.CONSUMER_ADDED
DISPATCH = _layouts.DISPATCH
ERROR = _layouts.ERROR
F64 = _layouts.F64
HANDSHAKE = _layouts.HANDSHAKE
HEAD = _layouts.HEAD
I64 = _layouts.I64
LEN = _layouts.LEN
MSG = _layouts.MSG
PULL = _layouts.PULL
QUEUE_LIST = _layouts.QUEUE_LIST
QUEUE_STATS = _layouts.QUEUE_STATS
REMOVE_CONSUMER = _layouts.REMOVE_CONSUMER
REQ = _layouts.REQ
REQ_Q = _layouts.REQ_Q
SEND = _layouts.SEND
STATS = _layouts.STATS
U32 = _layouts.U32


_DEST_NAMES: dict[Destination, bytes] = {}


def _dest_name(dest: Destination) -> bytes:
    raw = _DEST_NAMES.get(dest)
    if raw is None:
        raw = dest.name.encode()
        if len(_DEST_NAMES) >= 4096:
            _DEST_NAMES.clear()
        _DEST_NAMES[dest] = raw
    return raw


def write_ostr(value: str | None, parts: list[bytes]) -> int:
    if value is None:
        parts.append(NONE_BYTES)
        return 4
    raw = java_utf8(value)
    parts.append(LEN.pack(len(raw)))
    parts.append(raw)
    return 4 + len(raw)


def write_str(value: str, parts: list[bytes]) -> int:
    raw = java_utf8(value)
    parts.append(LEN.pack(len(raw)))
    parts.append(raw)
    return 4 + len(raw)


def write_dest(dest: Destination, parts: list[bytes]) -> int:
    raw = _dest_name(dest)
    parts.append(b"\x00" if dest.kind is QUEUE else b"\x01")
    parts.append(LEN.pack(len(raw)))
    parts.append(raw)
    return 5 + len(raw)


def write_message(m: Message, parts: list[bytes]) -> int:
    """Append the encoding of ``m`` to ``parts``; return its size in bytes. A string UTF-8 cannot encode (a lone
    surrogate) is written as Java's encoder writes it, ``?`` in its place, rather than failing the frame."""
    mark = len(parts)
    try:
        mid = m.message_id.encode()
        dest = m.destination
        dname = _dest_name(dest)
        pid = m.producer_id.encode()
        body = m.body
        flags = MSG_PERSISTENT if m.persistent else 0
        if type(body) is str:
            body = body.encode()
            flags |= MSG_TEXT
        elif type(body) is not bytes:
            if isinstance(body, str):
                body = str(body).encode()
                flags |= MSG_TEXT
            elif isinstance(body, (bytes, bytearray, memoryview)):
                body = bytes(body)
            elif isinstance(body, Mapping):
                map_parts: list[bytes] = []
                write_properties(body, map_parts)
                body = b"".join(map_parts)
                flags |= MSG_MAP
            elif isinstance(body, tuple):
                stream_parts: list[bytes] = []
                write_properties({str(i): v for i, v in enumerate(body)}, stream_parts)
                body = b"".join(stream_parts)
                flags |= MSG_STREAM
            elif isinstance(body, ObjectBody):
                body = body.data
                flags |= MSG_OBJECT
            else:
                cannot_encode(
                    f"message {m.message_id}: a body is str, bytes, a map, a tuple or an ObjectBody, "
                    f"not {type(body).__name__}"
                )
        props = m.properties
        if props:
            flags |= MSG_PROPERTIES
        opt = 0
        if m.correlation_id is not None:
            opt |= OPT_CORRELATION
        if m.reply_to is not None:
            opt |= OPT_REPLY_TO
        if m.type is not None:
            opt |= OPT_TYPE
        if m.group_id is not None:
            opt |= OPT_GROUP
        if m.original_destination is not None:
            opt |= OPT_ORIGINAL
        priority = m.priority
        if not 0 <= priority <= 9:
            cannot_encode(f"message {m.message_id}: priority {priority!r} is outside 0..9")
        parts.append(
            MSG.pack(
                flags,
                priority,
                0 if dest.kind is QUEUE else 1,
                opt,
                m.timestamp,
                m.expiration,
                m.group_seq,
                m.producer_seq,
                len(mid),
                len(dname),
                len(pid),
                len(body),
            )
        )
        parts.append(mid)
        parts.append(dname)
        parts.append(pid)
        parts.append(body)
        size = MSG.size + len(mid) + len(dname) + len(pid) + len(body)
        if opt:
            if m.correlation_id is not None:
                size += write_str(m.correlation_id, parts)
            if m.reply_to is not None:
                size += write_dest(m.reply_to, parts)
            if m.type is not None:
                size += write_str(m.type, parts)
            if m.group_id is not None:
                size += write_str(m.group_id, parts)
            if m.original_destination is not None:
                size += write_dest(m.original_destination, parts)
        if props:
            size += write_properties(props, parts)
        return size
    except UnicodeEncodeError:
        del parts[mark:]
        return write_message(java_text_message(m), parts)


def encode_handshake(version: int = PROTOCOL_VERSION) -> bytes:
    try:
        return HANDSHAKE.pack(HANDSHAKE.size - 4, FrameType.HANDSHAKE, MAGIC, version)
    except ENCODE_FAILURES as exc:
        cannot_encode("HANDSHAKE", exc)


def _simple(ftype: FrameType, head: bytes, parts: list[bytes], size: int) -> bytes:
    """A frame of ``head`` (the fields after the type) followed by ``parts`` (``size`` bytes in all)."""
    parts[0] = HEAD.pack(1 + len(head) + size, ftype) + head
    return b"".join(parts)


def encode_hello(
    request_id: int, client_id: str | None = None, user: str | None = None, password: str | None = None
) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_ostr(client_id, parts)
        if user is not None or password is not None:
            size += write_ostr(user, parts) + write_ostr(password, parts)
        return _simple(FrameType.HELLO, U32.pack(request_id), parts, size)
    except ENCODE_FAILURES as exc:
        cannot_encode("HELLO", exc)


def encode_connected(request_id: int, connection_id: int, broker_name: str = "") -> bytes:
    try:
        raw = broker_name.encode()
        return (
            CONNECTED.pack(CONNECTED.size - 4 + 4 + len(raw), FrameType.CONNECTED, request_id, connection_id)
            + LEN.pack(len(raw))
            + raw
        )
    except ENCODE_FAILURES as exc:
        cannot_encode("CONNECTED", exc)


def encode_add_consumer(request_id: int, info: ConsumerInfo) -> bytes:
    try:
        dest = info.destination
        dname = _dest_name(dest)
        flags = (
            (CI_EXCLUSIVE if info.exclusive else 0)
            | (CI_BROWSER if info.browser else 0)
            | (CI_NO_LOCAL if info.no_local else 0)
            | (CI_SELECTOR if info.selector is not None else 0)
            | (CI_DURABLE if info.subscription_name is not None else 0)
        )
        parts: list[bytes] = [b"", LEN.pack(len(dname)), dname]
        size = 4 + len(dname)
        if info.selector is not None:
            size += write_str(info.selector, parts)
        if info.subscription_name is not None:
            size += write_str(info.subscription_name, parts)
        parts[0] = ADD_CONSUMER.pack(
            ADD_CONSUMER.size - 4 + size,
            FrameType.ADD_CONSUMER,
            request_id,
            info.prefetch,
            info.priority,
            info.session_id,
            flags,
            0 if dest.kind is QUEUE else 1,
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("ADD_CONSUMER", exc)


def encode_consumer_added(request_id: int, consumer_id: int) -> bytes:
    try:
        return CONSUMER_ADDED.pack(CONSUMER_ADDED.size - 4, FrameType.CONSUMER_ADDED, request_id, consumer_id)
    except ENCODE_FAILURES as exc:
        cannot_encode("CONSUMER_ADDED", exc)


def encode_remove_consumer(request_id: int, consumer_id: int, last_delivered_seq: int = -1) -> bytes:
    try:
        return REMOVE_CONSUMER.pack(
            REMOVE_CONSUMER.size - 4, FrameType.REMOVE_CONSUMER, request_id, consumer_id, last_delivered_seq
        )
    except ENCODE_FAILURES as exc:
        cannot_encode("REMOVE_CONSUMER", exc)


def encode_send(request_id: int, message: Message, transaction_id: int | None = None, receipt: bool = False) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_message(message, parts)
        flags = (SEND_RECEIPT if receipt else 0) | (0 if transaction_id is None else SEND_TXN)
        parts[0] = SEND.pack(
            SEND.size - 4 + size, FrameType.SEND, request_id, flags, 0 if transaction_id is None else transaction_id
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("SEND", exc)


def encode_ok(request_id: int) -> bytes:
    try:
        return REQ.pack(REQ.size - 4, FrameType.OK, request_id)
    except ENCODE_FAILURES as exc:
        cannot_encode("OK", exc)


def encode_error(request_id: int, code: str, message: str, fatal: bool = False) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_str(code, parts) + write_str(message, parts)
        parts[0] = ERROR.pack(ERROR.size - 4 + size, FrameType.ERROR, request_id, 1 if fatal else 0)
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("ERROR", exc)


def encode_dispatch(dispatch: Dispatch, cache: EncodedMessages | None = None) -> bytes:
    """A DISPATCH frame; ``cache`` may hold the message's encoding already (see :class:`EncodedMessages`)."""
    try:
        message = dispatch.message
        flags = DISPATCH_GROUP_FIRST if dispatch.group_first else 0
        if message is None:
            return DISPATCH.pack(
                DISPATCH.size - 4,
                FrameType.DISPATCH,
                dispatch.consumer_id,
                dispatch.seq,
                dispatch.redelivery_counter,
                flags,
                dispatch.broker_seq,
            )
        if cache is not None:
            raw = cache.get(message)
            if raw is not None:
                return (
                    DISPATCH.pack(
                        DISPATCH.size - 4 + len(raw),
                        FrameType.DISPATCH,
                        dispatch.consumer_id,
                        dispatch.seq,
                        dispatch.redelivery_counter,
                        flags | DISPATCH_MESSAGE,
                        dispatch.broker_seq,
                    )
                    + raw
                )
        parts: list[bytes] = [b""]
        size = write_message(message, parts)
        parts[0] = DISPATCH.pack(
            DISPATCH.size - 4 + size,
            FrameType.DISPATCH,
            dispatch.consumer_id,
            dispatch.seq,
            dispatch.redelivery_counter,
            flags | DISPATCH_MESSAGE,
            dispatch.broker_seq,
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("DISPATCH", exc)


def encode_ack(ack: MessageAck) -> bytes:
    try:
        last = ack.last_message_id.encode()
        first = ack.first_message_id
        txn = ack.transaction_id
        cause = ack.poison_cause
        if first is None and cause is None:
            head = ACK.pack(
                ACK.size - 4 + 4 + len(last),
                FrameType.ACK,
                ack.consumer_id,
                ack.ack_type,
                0 if txn is None else ACK_TXN,
                ack.message_count,
                0 if txn is None else txn,
            )
            return head + LEN.pack(len(last)) + last
        parts: list[bytes] = [b"", LEN.pack(len(last)), last]
        size = 4 + len(last)
        flags = 0 if txn is None else ACK_TXN
        if first is not None:
            flags |= ACK_FIRST
            size += write_str(first, parts)
        if cause is not None:
            flags |= ACK_POISON
            size += write_str(cause, parts)
        parts[0] = ACK.pack(
            ACK.size - 4 + size,
            FrameType.ACK,
            ack.consumer_id,
            ack.ack_type,
            flags,
            ack.message_count,
            0 if txn is None else txn,
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("ACK", exc)


def encode_pull(consumer_id: int, timeout: float) -> bytes:
    try:
        return PULL.pack(PULL.size - 4, FrameType.PULL, consumer_id, timeout)
    except ENCODE_FAILURES as exc:
        cannot_encode("PULL", exc)


def encode_begin(transaction_id: int) -> bytes:
    try:
        return BEGIN.pack(BEGIN.size - 4, FrameType.BEGIN, transaction_id)
    except ENCODE_FAILURES as exc:
        cannot_encode("BEGIN", exc)


def encode_commit(request_id: int, transaction_id: int) -> bytes:
    try:
        return REQ_Q.pack(REQ_Q.size - 4, FrameType.COMMIT, request_id, transaction_id)
    except ENCODE_FAILURES as exc:
        cannot_encode("COMMIT", exc)


def encode_rollback(request_id: int, transaction_id: int) -> bytes:
    try:
        return REQ_Q.pack(REQ_Q.size - 4, FrameType.ROLLBACK, request_id, transaction_id)
    except ENCODE_FAILURES as exc:
        cannot_encode("ROLLBACK", exc)


def _request_with_name(ftype: FrameType, request_id: int, name: str) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_str(name, parts)
        return _simple(ftype, U32.pack(request_id), parts, size)
    except ENCODE_FAILURES as exc:
        cannot_encode(ftype.name, exc)


def encode_browse(request_id: int, queue: str) -> bytes:
    return _request_with_name(FrameType.BROWSE, request_id, queue)


def encode_browse_selected(request_id: int, queue: str, selector: str) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_str(queue, parts) + write_str(selector, parts)
        return _simple(FrameType.BROWSE_SELECTED, U32.pack(request_id), parts, size)
    except ENCODE_FAILURES as exc:
        cannot_encode("BROWSE_SELECTED", exc)


def encode_get_queue_statistics(request_id: int, queue: str) -> bytes:
    return _request_with_name(FrameType.GET_QUEUE_STATISTICS, request_id, queue)


def encode_list_queues(request_id: int, after: str = "") -> bytes:
    return _request_with_name(FrameType.LIST_QUEUES, request_id, after)


def encode_keep_alive() -> bytes:
    try:
        return REQ.pack(REQ.size - 4, FrameType.KEEP_ALIVE, 0)
    except ENCODE_FAILURES as exc:  # pragma: no cover - constant
        cannot_encode("KEEP_ALIVE", exc)


def encode_close(request_id: int, last_delivered_seq: int = -1) -> bytes:
    try:
        return REQ_Q.pack(REQ_Q.size - 4, FrameType.CLOSE, request_id, last_delivered_seq)
    except ENCODE_FAILURES as exc:
        cannot_encode("CLOSE", exc)


def encode_purge(request_id: int, queue: str) -> bytes:
    return _request_with_name(FrameType.PURGE, request_id, queue)


def encode_purge_selected(request_id: int, queue: str, selector: str) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_str(queue, parts) + write_str(selector, parts)
        return _simple(FrameType.PURGE_SELECTED, U32.pack(request_id), parts, size)
    except ENCODE_FAILURES as exc:
        cannot_encode("PURGE_SELECTED", exc)


def encode_list_topics(request_id: int) -> bytes:
    return _request_with_name(FrameType.LIST_TOPICS, request_id, "")


def encode_topic_list(request_id: int, json_text: str) -> bytes:
    return _request_with_name(FrameType.TOPIC_LIST, request_id, json_text)


def encode_unsubscribe(request_id: int, name: str) -> bytes:
    return _request_with_name(FrameType.UNSUBSCRIBE, request_id, name)


def encode_add_producer(producer_id: int, destination: str) -> bytes:
    return _request_with_name(FrameType.ADD_PRODUCER, producer_id, destination)


def encode_remove_producer(producer_id: int, destination: str) -> bytes:
    return _request_with_name(FrameType.REMOVE_PRODUCER, producer_id, destination)


def encode_create_temporary(request_id: int, spec: str) -> bytes:
    return _request_with_name(FrameType.CREATE_TEMPORARY, request_id, spec)


def encode_delete_temporary(request_id: int, destination: str) -> bytes:
    return _request_with_name(FrameType.DELETE_TEMPORARY, request_id, destination)


def encode_temporary_created(request_id: int, destination: str) -> bytes:
    return _request_with_name(FrameType.TEMPORARY_CREATED, request_id, destination)


def encode_purged(request_id: int, count: int) -> bytes:
    try:
        return REQ_Q.pack(REQ_Q.size - 4, FrameType.PURGED, request_id, count)
    except ENCODE_FAILURES as exc:
        cannot_encode("PURGED", exc)


def encode_browse_result(request_id: int, messages: Sequence[Message], last: bool = True) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = 0
        for m in messages:
            size += write_message(m, parts)
        parts[0] = BROWSE_RESULT.pack(
            BROWSE_RESULT.size - 4 + size, FrameType.BROWSE_RESULT, request_id, 1 if last else 0, len(messages)
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("BROWSE_RESULT", exc)


def encode_browse_results(request_id: int, messages: Iterable[Message], max_frame_size: int) -> list[bytes]:
    """A browse answer as BROWSE_RESULT frames of at most ``max_frame_size`` bytes each (the last one flagged)."""
    frames: list[bytes] = []
    batch: list[Message] = []
    batch_size = 0
    room = max_frame_size - BROWSE_RESULT.size
    for m in messages:
        try:
            size = write_message(m, [])
        except ENCODE_FAILURES as exc:
            cannot_encode("BROWSE_RESULT", exc)
        if size > room:
            raise LocalProtocolError(
                f"message {m.message_id} ({size} bytes) does not fit in a frame of {max_frame_size} bytes",
                size=size,
                maximum=max_frame_size,
            )
        if batch and batch_size + size > room:
            frames.append(encode_browse_result(request_id, batch, last=False))
            batch, batch_size = [], 0
        batch.append(m)
        batch_size += size
    frames.append(encode_browse_result(request_id, batch, last=True))
    return frames


def _stats(s: QueueStatistics, parts: list[bytes]) -> int:
    size = write_str(s.name, parts)
    parts.append(STATS.pack(s.size, s.inflight, s.enqueued, s.dequeued, s.expired, s.consumers, s.dispatched))
    return size + STATS.size


def encode_queue_statistics(request_id: int, statistics: QueueStatistics | None) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = 0 if statistics is None else _stats(statistics, parts)
        parts[0] = QUEUE_STATS.pack(
            QUEUE_STATS.size - 4 + size, FrameType.QUEUE_STATISTICS, request_id, 0 if statistics is None else 1
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("QUEUE_STATISTICS", exc)


def encode_queue_list(request_id: int, queues: Sequence[QueueStatistics]) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = 0
        for s in queues:
            size += _stats(s, parts)
        parts[0] = QUEUE_LIST.pack(QUEUE_LIST.size - 4 + size, FrameType.QUEUE_LIST, request_id, len(queues))
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("QUEUE_LIST", exc)
