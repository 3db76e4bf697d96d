"""The minibroker wire protocol, sans I/O: bytes in, frame objects out, and frame objects to bytes.

No sockets and no asyncio here (as h11): :class:`FrameDecoder` is fed whatever bytes arrived with
``receive_data()`` and hands back every complete frame from ``next_frames()`` (or by iterating it); the ``encode_*``
functions and :func:`encode` turn frames into bytes. The server and :class:`~minibroker.transport.tcp.TcpLink` do the
I/O around it.

Layout of every frame::

    u32 length (big-endian, the bytes after this field) | u8 frame type | fields...

Each direction starts with a HANDSHAKE frame (``b"MBRK"`` + u16 protocol version). Strings are u32 length + UTF-8
(length ``0xFFFFFFFF`` means None where a field is optional); integers are big-endian, 64-bit signed unless said
otherwise; message bodies travel raw (text as UTF-8 with a flag, bytes as they are). Requests carry a u32 request id
that their response echoes. Acks, pulls and begins are fire-and-forget; an error they cause comes back in an ERROR
frame with request id 0.

Malformed input raises :class:`~minibroker.errors.RemoteProtocolError` (or its subclass
:class:`~minibroker.errors.FrameTooLarge`) and nothing else; after that the decoder stays failed. Trying to encode
something the protocol cannot carry raises :class:`~minibroker.errors.LocalProtocolError`.
"""

from __future__ import annotations

import enum
import itertools
import struct
import sys
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Literal, NoReturn, TypeAlias

import attrs

from .. import errors as _errors
from .._core.commands import AckType, ConsumerInfo, MessageAck
from .._core.effects import Dispatch
from .._core.queue import QueueStatistics
from .._core.replay import BrokerInfo, CursorAck, PublishResult, QueuePosition, RangeEntry, string_properties
from .._defaults import DEFAULT_MAX_FRAME_SIZE
from ..errors import FrameTooLarge, LocalProtocolError, MinibrokerError, RemoteProtocolError
from ..message import Destination, DestinationKind, Message, PropertyValue

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "MAGIC",
    "PROTOCOL_VERSION",
    "AckBelow",
    "AddConsumer",
    "Begin",
    "BrokerInfoResult",
    "Browse",
    "BrowseResult",
    "Close",
    "Commit",
    "Connected",
    "ConsumerAdded",
    "CursorAcked",
    "EncodedMessages",
    "Error",
    "Frame",
    "FrameDecoder",
    "FrameType",
    "GetBrokerInfo",
    "GetQueueStatistics",
    "Handshake",
    "Hello",
    "ListQueues",
    "Ok",
    "Publish",
    "Published",
    "Pull",
    "Purge",
    "Purged",
    "QueueList",
    "QueueStatisticsResult",
    "RangeColumns",
    "RangeResult",
    "ReadRange",
    "RemoveConsumer",
    "Rollback",
    "Send",
    "encode",
    "encode_ack",
    "encode_ack_below",
    "encode_add_consumer",
    "encode_begin",
    "encode_broker_info",
    "encode_browse",
    "encode_browse_result",
    "encode_browse_results",
    "encode_close",
    "encode_commit",
    "encode_connected",
    "encode_consumer_added",
    "encode_cursor_acked",
    "encode_dispatch",
    "encode_error",
    "encode_get_broker_info",
    "encode_get_queue_statistics",
    "encode_handshake",
    "encode_hello",
    "encode_list_queues",
    "encode_ok",
    "encode_publish",
    "encode_published",
    "encode_pull",
    "encode_purge",
    "encode_purged",
    "encode_queue_list",
    "encode_queue_statistics",
    "encode_range_columns",
    "encode_range_columns_results",
    "encode_range_result",
    "encode_range_results",
    "encode_read_range",
    "encode_remove_consumer",
    "encode_rollback",
    "encode_send",
    "error_for",
    "error_from_frame",
    "range_columns",
    "range_columns_of",
]

MAGIC = b"MBRK"
_BIG_ENDIAN = sys.byteorder == "big"
PROTOCOL_VERSION = 1


class FrameType(enum.IntEnum):
    HANDSHAKE = 0x01
    # client -> server
    HELLO = 0x02
    ADD_CONSUMER = 0x03
    REMOVE_CONSUMER = 0x04
    SEND = 0x05
    ACK = 0x06
    PULL = 0x07
    BEGIN = 0x08
    COMMIT = 0x09
    ROLLBACK = 0x0A
    BROWSE = 0x0B
    GET_QUEUE_STATISTICS = 0x0C
    LIST_QUEUES = 0x0D
    CLOSE = 0x0E
    PURGE = 0x0F
    # server -> client
    CONNECTED = 0x20
    CONSUMER_ADDED = 0x21
    OK = 0x22
    ERROR = 0x23
    DISPATCH = 0x24
    BROWSE_RESULT = 0x25
    QUEUE_STATISTICS = 0x26
    QUEUE_LIST = 0x27
    PURGED = 0x28
    # replayable reads (minibroker._core.replay): client -> server
    READ_RANGE = 0x40
    ACK_BELOW = 0x41
    GET_BROKER_INFO = 0x42
    PUBLISH = 0x43
    # ... and their answers, server -> client
    RANGE_RESULT = 0x50
    CURSOR_ACKED = 0x51
    BROKER_INFO = 0x52
    PUBLISHED = 0x53
    RANGE_COLUMNS = 0x54


_FT = FrameType
CLIENT_FRAMES = frozenset({
    _FT.HELLO, _FT.ADD_CONSUMER, _FT.REMOVE_CONSUMER, _FT.SEND, _FT.ACK, _FT.PULL, _FT.BEGIN, _FT.COMMIT,
    _FT.ROLLBACK, _FT.BROWSE, _FT.GET_QUEUE_STATISTICS, _FT.LIST_QUEUES, _FT.CLOSE,
    _FT.READ_RANGE, _FT.ACK_BELOW, _FT.GET_BROKER_INFO, _FT.PUBLISH,
    _FT.PURGE,
})
SERVER_FRAMES = frozenset({
    _FT.CONNECTED, _FT.CONSUMER_ADDED, _FT.OK, _FT.ERROR, _FT.DISPATCH, _FT.BROWSE_RESULT, _FT.QUEUE_STATISTICS,
    _FT.QUEUE_LIST,
    _FT.RANGE_RESULT, _FT.CURSOR_ACKED, _FT.BROKER_INFO, _FT.PUBLISHED, _FT.RANGE_COLUMNS,
    _FT.PURGED,
})

# -- frames -------------------------------------------------------------------------------------------------------
# DISPATCH decodes to minibroker's own Dispatch and ACK to MessageAck: the wire carries exactly those values.


@attrs.frozen(slots=True)
class Handshake:
    version: int = PROTOCOL_VERSION


@attrs.frozen(slots=True)
class Hello:
    """Opens the broker connection. ``user`` and ``password`` (optional trailing fields: a HELLO without them is
    valid) are checked by the broker's security plugin, if it has one."""

    request_id: int
    client_id: str | None = None
    user: str | None = None
    password: str | None = None

    def __repr__(self) -> str:  # never print a password
        password = None if self.password is None else "***"
        return f"Hello(request_id={self.request_id}, client_id={self.client_id!r}, user={self.user!r}, " \
               f"password={password!r})"


@attrs.frozen(slots=True)
class Connected:
    request_id: int
    connection_id: int
    broker_name: str = ""


@attrs.frozen(slots=True)
class AddConsumer:
    request_id: int
    info: ConsumerInfo


@attrs.frozen(slots=True)
class ConsumerAdded:
    request_id: int
    consumer_id: int


@attrs.frozen(slots=True)
class RemoveConsumer:
    request_id: int
    consumer_id: int
    last_delivered_seq: int = -1


@attrs.define(slots=True)
class Send:
    """A message to send; ``receipt`` asks the broker for an OK once it has the message (a synchronous send)."""

    request_id: int
    message: Message
    transaction_id: int | None = None
    receipt: bool = False


@attrs.frozen(slots=True)
class Ok:
    """The answer to a request that returns nothing (a send receipt, a commit, a close...)."""

    request_id: int


@attrs.frozen(slots=True)
class Error:
    """A failed request (``request_id`` 0: a fire-and-forget command failed, or the connection is being closed).

    ``code`` is the stable :attr:`MinibrokerError.code`; ``fatal`` says the sender closes the connection next.
    """

    request_id: int
    code: str
    message: str
    fatal: bool = False


@attrs.frozen(slots=True)
class Pull:
    consumer_id: int
    timeout: float


@attrs.frozen(slots=True)
class Begin:
    """Open a transaction; the id is the client's choice, unique within its connection."""

    transaction_id: int


@attrs.frozen(slots=True)
class Commit:
    request_id: int
    transaction_id: int


@attrs.frozen(slots=True)
class Rollback:
    request_id: int
    transaction_id: int


@attrs.frozen(slots=True)
class Browse:
    request_id: int
    queue: str


@attrs.frozen(slots=True)
class BrowseResult:
    """One part of a browse answer; the answer is complete at the part with ``last`` set."""

    request_id: int
    messages: tuple[Message, ...]
    last: bool = True


@attrs.frozen(slots=True)
class GetQueueStatistics:
    request_id: int
    queue: str


@attrs.frozen(slots=True)
class QueueStatisticsResult:
    request_id: int
    statistics: QueueStatistics | None


@attrs.frozen(slots=True)
class ListQueues:
    request_id: int


@attrs.frozen(slots=True)
class QueueList:
    request_id: int
    queues: tuple[QueueStatistics, ...]


@attrs.frozen(slots=True)
class Close:
    request_id: int
    last_delivered_seq: int = -1


@attrs.frozen(slots=True)
class Purge:
    """Remove every message of a queue (an administrator's command; answered by PURGED)."""

    request_id: int
    queue: str


@attrs.frozen(slots=True)
class Purged:
    request_id: int
    count: int


# -- replayable reads (sequence ranges, cursor acks, the epoch, batch publish) ---------------------------------------


@attrs.frozen(slots=True)
class ReadRange:
    """Read the messages of ``queue`` with ``from_seq <= seq < to_seq`` (None: all), at most ``limit`` (None: no
    limit), without consuming them; with ``epoch``, the broker refuses unless it is its own (``stale-epoch``)."""

    request_id: int
    queue: str
    from_seq: int = 0
    to_seq: int | None = None
    limit: int | None = None
    epoch: str | None = None
    #: answer in RANGE_COLUMNS frames (column buffers, for Arrow) instead of RANGE_RESULT frames
    columnar: bool = False


@attrs.frozen(slots=True)
class RangeColumns:
    """One part of a columnar range read's answer: ``count`` messages as column buffers, little-endian, laid out as
    Apache Arrow arrays (offsets are int32, ``count + 1`` of them, starting at 0) so that a reader can wrap them
    without a per-message step. Complete at the part with ``last`` set.

    Columns: ``seq`` (int64), ``redelivery_counter`` (int32), ``priority`` (int32), ``timestamp`` (int64, microseconds
    since the epoch, UTC), ``flags`` (one byte each: 1 = text body, 2 = persistent), message ids (``id_offsets`` into
    UTF-8 ``id_data``), bodies (``body_offsets`` into ``body_data``; text as UTF-8), and properties as text
    (:func:`~minibroker._core.replay.string_properties`): message i owns entries ``prop_offsets[i]`` to
    ``prop_offsets[i + 1]`` of the keys (``key_offsets``/``key_data``) and values (``value_offsets``/``value_data``;
    ``value_nulls`` has one byte per value, 1 = null).

    The decoder checks every buffer's size and the ends of each offsets buffer, not that offsets never decrease: a
    reader that trusts them blindly (Arrow's ``from_buffers``) must validate the arrays it builds.
    """

    request_id: int
    epoch: str
    next_seq: int
    count: int
    seq: bytes
    redelivery_counter: bytes
    priority: bytes
    timestamp: bytes
    flags: bytes
    id_offsets: bytes
    id_data: bytes
    body_offsets: bytes
    body_data: bytes
    prop_offsets: bytes
    key_offsets: bytes
    key_data: bytes
    value_offsets: bytes
    value_data: bytes
    value_nulls: bytes
    last: bool = True

    @property
    def property_count(self) -> int:
        return (len(self.key_offsets) // 4) - 1


@attrs.frozen(slots=True)
class RangeResult:
    """One part of a range read's answer (complete at the part with ``last`` set)."""

    request_id: int
    epoch: str
    next_seq: int
    entries: tuple[RangeEntry, ...]
    last: bool = True


@attrs.frozen(slots=True)
class AckBelow:
    """Consume every message of ``queue`` with ``seq`` below ``seq`` for cursor ``cursor``."""

    request_id: int
    queue: str
    cursor: str
    seq: int
    epoch: str | None = None


@attrs.frozen(slots=True)
class CursorAcked:
    request_id: int
    result: CursorAck


@attrs.frozen(slots=True)
class GetBrokerInfo:
    """The broker's epoch and name, and the positions of ``queues`` (None: every queue) with ``cursor``'s floors."""

    request_id: int
    queues: tuple[str, ...] | None = None
    cursor: str | None = None


@attrs.frozen(slots=True)
class BrokerInfoResult:
    request_id: int
    info: BrokerInfo


@attrs.define(slots=True)
class Publish:
    """A batch of messages sent outside any transaction; ``dedupe``: the broker drops ids seen before."""

    request_id: int
    messages: tuple[Message, ...]
    dedupe: bool = False


@attrs.frozen(slots=True)
class Published:
    request_id: int
    result: PublishResult


Frame: TypeAlias = (
    Handshake | Hello | Connected | AddConsumer | ConsumerAdded | RemoveConsumer | Send | Ok | Error | Dispatch
    | MessageAck | Pull | Begin | Commit | Rollback | Browse | BrowseResult | GetQueueStatistics
    | QueueStatisticsResult | ListQueues | QueueList | Close
    | ReadRange | RangeResult | AckBelow | CursorAcked | GetBrokerInfo | BrokerInfoResult | Publish | Published
    | Purge | Purged
    | RangeColumns
)

# -- errors <-> frames ----------------------------------------------------------------------------------------------


def _error_classes() -> dict[str, type[MinibrokerError]]:
    table: dict[str, type[MinibrokerError]] = {}
    for name in _errors.__all__:
        cls = getattr(_errors, name)
        if isinstance(cls, type) and issubclass(cls, MinibrokerError):
            table.setdefault(cls.code, cls)
    return table


_ERROR_CLASSES = _error_classes()


def error_for(code: str, message: str) -> MinibrokerError:
    """The :class:`MinibrokerError` subclass whose ``code`` is ``code`` (the root class for an unknown code)."""
    cls = _ERROR_CLASSES.get(code, MinibrokerError)
    try:
        return cls(message)
    except Exception:  # pragma: no cover - every class in the tree takes a message
        return MinibrokerError(message)


def error_from_frame(frame: Error) -> MinibrokerError:
    return error_for(frame.code, frame.message)


# -- primitives -----------------------------------------------------------------------------------------------------

_LEN = struct.Struct(">I")
_HEAD = struct.Struct(">IB")  # frame length, frame type
_U16 = struct.Struct(">H")
_U32 = _LEN
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")
_NONE = 0xFFFFFFFF
_NONE_BYTES = _LEN.pack(_NONE)
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1

# message: flags, priority, destination kind, optional-field mask, timestamp, expiration, group_seq, producer_seq,
# then the lengths of message_id, destination name, producer_id and body
_MSG = struct.Struct(">BBBBddqqIIII")
_MSG_PERSISTENT = 1
_MSG_TEXT = 2
_MSG_PROPERTIES = 4
_MSG_FLAGS = 7
_OPT_CORRELATION = 1
_OPT_REPLY_TO = 2
_OPT_TYPE = 4
_OPT_GROUP = 8
_OPT_ORIGINAL = 16
_OPT_ALL = 31

_HANDSHAKE = struct.Struct(">IB4sH")
_HANDSHAKE_PREFIX = _HEAD.pack(_HANDSHAKE.size - 4, FrameType.HANDSHAKE) + MAGIC
_REQ = struct.Struct(">IBI")  # length, type, request id
_REQ_Q = struct.Struct(">IBIq")  # ... + one int64
_CONSUMER_ADDED = _REQ_Q
_REMOVE_CONSUMER = struct.Struct(">IBIqq")
_CONNECTED = _REQ_Q
_SEND = struct.Struct(">IBIBq")  # length, type, request id, flags, transaction id
_SEND_RECEIPT = 1
_SEND_TXN = 2
_DISPATCH = struct.Struct(">IBqqqB")  # length, type, consumer id, seq, redelivery counter, flags
_DISPATCH_MESSAGE = 1
_DISPATCH_GROUP_FIRST = 2
_ACK = struct.Struct(">IBqBBqq")  # length, type, consumer id, ack type, flags, message count, transaction id
_ACK_FIRST = 1
_ACK_TXN = 2
_ACK_POISON = 4
_PULL = struct.Struct(">IBqd")
_BEGIN = struct.Struct(">IBq")
_ADD_CONSUMER = struct.Struct(">IBIiiqBB")  # ..., prefetch, priority, session id, flags, destination kind
_CI_EXCLUSIVE = 1
_CI_BROWSER = 2
_CI_NO_LOCAL = 4
_CI_SELECTOR = 8
_ERROR = struct.Struct(">IBIB")
_STATS = struct.Struct(">qqqqqqq")
_BROWSE_RESULT = struct.Struct(">IBIBI")  # ..., last, count
_QUEUE_STATS = struct.Struct(">IBIB")  # ..., present
_QUEUE_LIST = struct.Struct(">IBII")  # ..., count
_READ_RANGE = struct.Struct(">IBIqqqB")  # ..., from, to (-1: none), limit (-1: none), flags; then queue, epoch
_READ_RANGE_COLUMNAR = 1
_RANGE_RESULT = struct.Struct(">IBIBqI")  # ..., last, next seq, count; then epoch, then per entry _RANGE_ENTRY+message
_RANGE_COLUMNS = _RANGE_RESULT  # the same head; then the epoch and 15 sections (u32 length + bytes)
_COLUMN_SECTIONS = ("seq", "redelivery_counter", "priority", "timestamp", "flags", "id_offsets", "id_data",
                    "body_offsets", "body_data", "prop_offsets", "key_offsets", "key_data", "value_offsets",
                    "value_data", "value_nulls")
_RANGE_ENTRY = struct.Struct(">qq")  # seq, redelivery counter
_CURSOR_ACKED = struct.Struct(">IBIqqqq")  # ..., floor, removed, skipped, next seq; then epoch, queue, cursor
_GET_BROKER_INFO = struct.Struct(">IBIB")  # ..., flags (1: a queue list follows the cursor)
_BROKER_INFO = struct.Struct(">IBII")  # ..., count; then epoch, name, per queue: name + _POSITION
_POSITION = struct.Struct(">qqqq")  # first seq, next seq, size, cursor floor (-1: none)
_PUBLISH = struct.Struct(">IBIBI")  # ..., flags (1: dedupe), count; then the messages
_PUBLISHED = struct.Struct(">IBIqq")  # ..., accepted, duplicates

_QUEUE = DestinationKind.QUEUE
_TOPIC = DestinationKind.TOPIC
_KINDS = (_QUEUE, _TOPIC)
_ACK_TYPES = tuple(AckType)

# property value tags
_P_NONE = 0
_P_FALSE = 1
_P_TRUE = 2
_P_INT = 3
_P_FLOAT = 4
_P_STR = 5
_P_BYTES = 6
_P_BIGINT = 7

_ENCODE_FAILURES = (struct.error, UnicodeEncodeError, TypeError, AttributeError, OverflowError, ValueError)


def _local(what: str, exc: BaseException | None = None) -> NoReturn:
    detail = f": {exc}" if exc is not None else ""
    raise LocalProtocolError(f"cannot encode {what}{detail}") from exc


# -- encoding -------------------------------------------------------------------------------------------------------

_DEST_NAMES: dict[Destination, bytes] = {}


def _dest_name(dest: Destination) -> bytes:
    raw = _DEST_NAMES.get(dest)
    if raw is None:
        raw = dest.name.encode()
        if len(_DEST_NAMES) >= 4096:
            _DEST_NAMES.clear()
        _DEST_NAMES[dest] = raw
    return raw


def _ostr(value: str | None, parts: list[bytes]) -> int:
    if value is None:
        parts.append(_NONE_BYTES)
        return 4
    raw = value.encode()
    parts.append(_LEN.pack(len(raw)))
    parts.append(raw)
    return 4 + len(raw)


def _str(value: str, parts: list[bytes]) -> int:
    raw = value.encode()
    parts.append(_LEN.pack(len(raw)))
    parts.append(raw)
    return 4 + len(raw)


def _dest(dest: Destination, parts: list[bytes]) -> int:
    raw = _dest_name(dest)
    parts.append(b"\x00" if dest.kind is _QUEUE else b"\x01")
    parts.append(_LEN.pack(len(raw)))
    parts.append(raw)
    return 5 + len(raw)


def _properties(props: Mapping[str, PropertyValue], parts: list[bytes]) -> int:
    parts.append(_LEN.pack(len(props)))
    size = 4
    pack_len = _LEN.pack
    for key, value in props.items():
        if not isinstance(key, str):
            _local(f"property name {key!r}: names are str")
        raw = key.encode()
        parts.append(pack_len(len(raw)))
        parts.append(raw)
        size += 4 + len(raw)
        if value is None:
            parts.append(b"\x00")
            size += 1
        elif value is True:
            parts.append(b"\x02")
            size += 1
        elif value is False:
            parts.append(b"\x01")
            size += 1
        elif isinstance(value, int):
            if _INT64_MIN <= value <= _INT64_MAX:
                parts.append(b"\x03")
                parts.append(_I64.pack(value))
                size += 9
            else:
                big = int(value).to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
                parts.append(b"\x07")
                parts.append(pack_len(len(big)))
                parts.append(big)
                size += 5 + len(big)
        elif isinstance(value, float):
            parts.append(b"\x04")
            parts.append(_F64.pack(value))
            size += 9
        elif isinstance(value, str):
            raw = value.encode()
            parts.append(b"\x05")
            parts.append(pack_len(len(raw)))
            parts.append(raw)
            size += 5 + len(raw)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
            parts.append(b"\x06")
            parts.append(pack_len(len(raw)))
            parts.append(raw)
            size += 5 + len(raw)
        else:
            _local(f"property {key!r}: a {type(value).__name__} is not a property type "
                   "(str, int, float, bool, bytes or None)")
    return size


def _message(m: Message, parts: list[bytes]) -> int:
    """Append the encoding of ``m`` to ``parts``; return its size in bytes."""
    mid = m.message_id.encode()
    dest = m.destination
    dname = _dest_name(dest)
    pid = m.producer_id.encode()
    body = m.body
    flags = _MSG_PERSISTENT if m.persistent else 0
    if type(body) is str:
        body = body.encode()
        flags |= _MSG_TEXT
    elif type(body) is not bytes:
        if isinstance(body, str):
            body = str(body).encode()
            flags |= _MSG_TEXT
        elif isinstance(body, (bytes, bytearray, memoryview)):
            body = bytes(body)
        else:
            _local(f"message {m.message_id}: a body is str or bytes, not {type(body).__name__}")
    props = m.properties
    if props:
        flags |= _MSG_PROPERTIES
    opt = 0
    if m.correlation_id is not None:
        opt |= _OPT_CORRELATION
    if m.reply_to is not None:
        opt |= _OPT_REPLY_TO
    if m.type is not None:
        opt |= _OPT_TYPE
    if m.group_id is not None:
        opt |= _OPT_GROUP
    if m.original_destination is not None:
        opt |= _OPT_ORIGINAL
    priority = m.priority
    if not 0 <= priority <= 9:
        _local(f"message {m.message_id}: priority {priority!r} is outside 0..9")
    parts.append(_MSG.pack(flags, priority, 0 if dest.kind is _QUEUE else 1, opt, m.timestamp, m.expiration,
                           m.group_seq, m.producer_seq, len(mid), len(dname), len(pid), len(body)))
    parts.append(mid)
    parts.append(dname)
    parts.append(pid)
    parts.append(body)
    size = _MSG.size + len(mid) + len(dname) + len(pid) + len(body)
    if opt:
        if m.correlation_id is not None:
            size += _str(m.correlation_id, parts)
        if m.reply_to is not None:
            size += _dest(m.reply_to, parts)
        if m.type is not None:
            size += _str(m.type, parts)
        if m.group_id is not None:
            size += _str(m.group_id, parts)
        if m.original_destination is not None:
            size += _dest(m.original_destination, parts)
    if props:
        size += _properties(props, parts)
    return size


def encode_handshake(version: int = PROTOCOL_VERSION) -> bytes:
    try:
        return _HANDSHAKE.pack(_HANDSHAKE.size - 4, FrameType.HANDSHAKE, MAGIC, version)
    except _ENCODE_FAILURES as exc:
        _local("HANDSHAKE", exc)


def _simple(ftype: FrameType, head: bytes, parts: list[bytes], size: int) -> bytes:
    """A frame of ``head`` (the fields after the type) followed by ``parts`` (``size`` bytes in all)."""
    parts[0] = _HEAD.pack(1 + len(head) + size, ftype) + head
    return b"".join(parts)


def encode_hello(request_id: int, client_id: str | None = None, user: str | None = None,
                 password: str | None = None) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = _ostr(client_id, parts)
        if user is not None or password is not None:
            size += _ostr(user, parts) + _ostr(password, parts)
        return _simple(FrameType.HELLO, _U32.pack(request_id), parts, size)
    except _ENCODE_FAILURES as exc:
        _local("HELLO", exc)


def encode_connected(request_id: int, connection_id: int, broker_name: str = "") -> bytes:
    try:
        raw = broker_name.encode()
        return _CONNECTED.pack(_CONNECTED.size - 4 + 4 + len(raw), FrameType.CONNECTED, request_id,
                               connection_id) + _LEN.pack(len(raw)) + raw
    except _ENCODE_FAILURES as exc:
        _local("CONNECTED", exc)


def encode_add_consumer(request_id: int, info: ConsumerInfo) -> bytes:
    try:
        dest = info.destination
        dname = _dest_name(dest)
        flags = ((_CI_EXCLUSIVE if info.exclusive else 0) | (_CI_BROWSER if info.browser else 0)
                 | (_CI_NO_LOCAL if info.no_local else 0) | (_CI_SELECTOR if info.selector is not None else 0))
        parts: list[bytes] = [b"", _LEN.pack(len(dname)), dname]
        size = 4 + len(dname)
        if info.selector is not None:
            size += _str(info.selector, parts)
        parts[0] = _ADD_CONSUMER.pack(_ADD_CONSUMER.size - 4 + size, FrameType.ADD_CONSUMER, request_id,
                                      info.prefetch, info.priority, info.session_id, flags,
                                      0 if dest.kind is _QUEUE else 1)
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("ADD_CONSUMER", exc)


def encode_consumer_added(request_id: int, consumer_id: int) -> bytes:
    try:
        return _CONSUMER_ADDED.pack(_CONSUMER_ADDED.size - 4, FrameType.CONSUMER_ADDED, request_id, consumer_id)
    except _ENCODE_FAILURES as exc:
        _local("CONSUMER_ADDED", exc)


def encode_remove_consumer(request_id: int, consumer_id: int, last_delivered_seq: int = -1) -> bytes:
    try:
        return _REMOVE_CONSUMER.pack(_REMOVE_CONSUMER.size - 4, FrameType.REMOVE_CONSUMER, request_id, consumer_id,
                                     last_delivered_seq)
    except _ENCODE_FAILURES as exc:
        _local("REMOVE_CONSUMER", exc)


def encode_send(request_id: int, message: Message, transaction_id: int | None = None, receipt: bool = False) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = _message(message, parts)
        flags = (_SEND_RECEIPT if receipt else 0) | (0 if transaction_id is None else _SEND_TXN)
        parts[0] = _SEND.pack(_SEND.size - 4 + size, FrameType.SEND, request_id, flags,
                              0 if transaction_id is None else transaction_id)
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("SEND", exc)


def encode_ok(request_id: int) -> bytes:
    try:
        return _REQ.pack(_REQ.size - 4, FrameType.OK, request_id)
    except _ENCODE_FAILURES as exc:
        _local("OK", exc)


def encode_error(request_id: int, code: str, message: str, fatal: bool = False) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = _str(code, parts) + _str(message, parts)
        parts[0] = _ERROR.pack(_ERROR.size - 4 + size, FrameType.ERROR, request_id, 1 if fatal else 0)
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("ERROR", exc)


class EncodedMessages:
    """Remembers the wire encoding of recently decoded messages, so that dispatching a message that arrived in a
    SEND frame copies its bytes instead of encoding it again (messages are never changed once sent).

    Keyed by identity, holding the message itself so that the key stays valid; the oldest entries go first, once
    more than ``limit`` messages or ``max_bytes`` bytes of encodings are held. Bounded by bytes so that a backlog of
    small messages (the common case: tens of thousands queued behind a full prefetch window) is still cached when
    it is finally dispatched, and large messages cannot pin much memory.
    """

    __slots__ = ("_entries", "bytes", "limit", "max_bytes")

    def __init__(self, limit: int = 262_144, max_bytes: int = 32 << 20) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        #: bytes of encodings held
        self.bytes = 0
        # an OrderedDict: dropping the oldest of a plain dict (del d[next(iter(d))]) makes the next lookup of the
        # oldest skip every deleted slot, ~15 us per send at this size, where popitem(last=False) is O(1)
        self._entries: OrderedDict[int, tuple[Message, bytes]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def put(self, message: Message, raw: bytes) -> None:
        entries = self._entries
        key = id(message)
        old = entries.get(key)
        if old is not None:  # the same message again: replaced (held here, its id cannot name another message)
            self.bytes -= len(old[1])
        entries[key] = (message, raw)
        self.bytes += len(raw)
        if self.bytes > self.max_bytes or len(entries) > self.limit:
            while len(entries) > 1 and (len(entries) > self.limit or self.bytes > self.max_bytes):
                self.bytes -= len(entries.popitem(last=False)[1][1])

    def get(self, message: Message) -> bytes | None:
        entry = self._entries.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        return None

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0


def encode_dispatch(dispatch: Dispatch, cache: EncodedMessages | None = None) -> bytes:
    """A DISPATCH frame; ``cache`` may hold the message's encoding already (see :class:`EncodedMessages`)."""
    try:
        message = dispatch.message
        flags = _DISPATCH_GROUP_FIRST if dispatch.group_first else 0
        if message is None:
            return _DISPATCH.pack(_DISPATCH.size - 4, FrameType.DISPATCH, dispatch.consumer_id, dispatch.seq,
                                  dispatch.redelivery_counter, flags)
        if cache is not None:
            raw = cache.get(message)
            if raw is not None:
                return _DISPATCH.pack(_DISPATCH.size - 4 + len(raw), FrameType.DISPATCH, dispatch.consumer_id,
                                      dispatch.seq, dispatch.redelivery_counter, flags | _DISPATCH_MESSAGE) + raw
        parts: list[bytes] = [b""]
        size = _message(message, parts)
        parts[0] = _DISPATCH.pack(_DISPATCH.size - 4 + size, FrameType.DISPATCH, dispatch.consumer_id,
                                  dispatch.seq, dispatch.redelivery_counter, flags | _DISPATCH_MESSAGE)
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("DISPATCH", exc)


def encode_ack(ack: MessageAck) -> bytes:
    try:
        last = ack.last_message_id.encode()
        first = ack.first_message_id
        txn = ack.transaction_id
        cause = ack.poison_cause
        if first is None and cause is None:
            head = _ACK.pack(_ACK.size - 4 + 4 + len(last), FrameType.ACK, ack.consumer_id, ack.ack_type,
                             0 if txn is None else _ACK_TXN, ack.message_count, 0 if txn is None else txn)
            return head + _LEN.pack(len(last)) + last
        parts: list[bytes] = [b"", _LEN.pack(len(last)), last]
        size = 4 + len(last)
        flags = 0 if txn is None else _ACK_TXN
        if first is not None:
            flags |= _ACK_FIRST
            size += _str(first, parts)
        if cause is not None:
            flags |= _ACK_POISON
            size += _str(cause, parts)
        parts[0] = _ACK.pack(_ACK.size - 4 + size, FrameType.ACK, ack.consumer_id, ack.ack_type, flags,
                             ack.message_count, 0 if txn is None else txn)
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("ACK", exc)


def encode_pull(consumer_id: int, timeout: float) -> bytes:
    try:
        return _PULL.pack(_PULL.size - 4, FrameType.PULL, consumer_id, timeout)
    except _ENCODE_FAILURES as exc:
        _local("PULL", exc)


def encode_begin(transaction_id: int) -> bytes:
    try:
        return _BEGIN.pack(_BEGIN.size - 4, FrameType.BEGIN, transaction_id)
    except _ENCODE_FAILURES as exc:
        _local("BEGIN", exc)


def encode_commit(request_id: int, transaction_id: int) -> bytes:
    try:
        return _REQ_Q.pack(_REQ_Q.size - 4, FrameType.COMMIT, request_id, transaction_id)
    except _ENCODE_FAILURES as exc:
        _local("COMMIT", exc)


def encode_rollback(request_id: int, transaction_id: int) -> bytes:
    try:
        return _REQ_Q.pack(_REQ_Q.size - 4, FrameType.ROLLBACK, request_id, transaction_id)
    except _ENCODE_FAILURES as exc:
        _local("ROLLBACK", exc)


def _request_with_name(ftype: FrameType, request_id: int, name: str) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = _str(name, parts)
        return _simple(ftype, _U32.pack(request_id), parts, size)
    except _ENCODE_FAILURES as exc:
        _local(ftype.name, exc)


def encode_browse(request_id: int, queue: str) -> bytes:
    return _request_with_name(FrameType.BROWSE, request_id, queue)


def encode_get_queue_statistics(request_id: int, queue: str) -> bytes:
    return _request_with_name(FrameType.GET_QUEUE_STATISTICS, request_id, queue)


def encode_list_queues(request_id: int) -> bytes:
    try:
        return _REQ.pack(_REQ.size - 4, FrameType.LIST_QUEUES, request_id)
    except _ENCODE_FAILURES as exc:
        _local("LIST_QUEUES", exc)


def encode_close(request_id: int, last_delivered_seq: int = -1) -> bytes:
    try:
        return _REQ_Q.pack(_REQ_Q.size - 4, FrameType.CLOSE, request_id, last_delivered_seq)
    except _ENCODE_FAILURES as exc:
        _local("CLOSE", exc)


def encode_purge(request_id: int, queue: str) -> bytes:
    return _request_with_name(FrameType.PURGE, request_id, queue)


def encode_purged(request_id: int, count: int) -> bytes:
    try:
        return _REQ_Q.pack(_REQ_Q.size - 4, FrameType.PURGED, request_id, count)
    except _ENCODE_FAILURES as exc:
        _local("PURGED", exc)


def encode_browse_result(request_id: int, messages: Sequence[Message], last: bool = True) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = 0
        for m in messages:
            size += _message(m, parts)
        parts[0] = _BROWSE_RESULT.pack(_BROWSE_RESULT.size - 4 + size, FrameType.BROWSE_RESULT, request_id,
                                       1 if last else 0, len(messages))
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("BROWSE_RESULT", exc)


def encode_browse_results(request_id: int, messages: Iterable[Message], max_frame_size: int) -> list[bytes]:
    """A browse answer as BROWSE_RESULT frames of at most ``max_frame_size`` bytes each (the last one flagged)."""
    frames: list[bytes] = []
    batch: list[Message] = []
    batch_size = 0
    room = max_frame_size - _BROWSE_RESULT.size
    for m in messages:
        try:
            size = _message(m, [])
        except _ENCODE_FAILURES as exc:
            _local("BROWSE_RESULT", exc)
        if size > room:
            raise LocalProtocolError(f"message {m.message_id} ({size} bytes) does not fit in a frame of "
                                     f"{max_frame_size} bytes", size=size, maximum=max_frame_size)
        if batch and batch_size + size > room:
            frames.append(encode_browse_result(request_id, batch, last=False))
            batch, batch_size = [], 0
        batch.append(m)
        batch_size += size
    frames.append(encode_browse_result(request_id, batch, last=True))
    return frames


def _stats(s: QueueStatistics, parts: list[bytes]) -> int:
    size = _str(s.name, parts)
    parts.append(_STATS.pack(s.size, s.inflight, s.enqueued, s.dequeued, s.expired, s.consumers, s.dispatched))
    return size + _STATS.size


def encode_queue_statistics(request_id: int, statistics: QueueStatistics | None) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = 0 if statistics is None else _stats(statistics, parts)
        parts[0] = _QUEUE_STATS.pack(_QUEUE_STATS.size - 4 + size, FrameType.QUEUE_STATISTICS, request_id,
                                     0 if statistics is None else 1)
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("QUEUE_STATISTICS", exc)


def encode_queue_list(request_id: int, queues: Sequence[QueueStatistics]) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = 0
        for s in queues:
            size += _stats(s, parts)
        parts[0] = _QUEUE_LIST.pack(_QUEUE_LIST.size - 4 + size, FrameType.QUEUE_LIST, request_id, len(queues))
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("QUEUE_LIST", exc)


def _opt_i64(value: int | None) -> int:
    return -1 if value is None else value


def encode_read_range(request_id: int, queue: str, from_seq: int = 0, to_seq: int | None = None,
                      limit: int | None = None, epoch: str | None = None, columnar: bool = False) -> bytes:
    try:
        if from_seq < 0 or (to_seq is not None and to_seq < 0) or (limit is not None and limit < 0):
            raise ValueError(f"negative range bounds: from {from_seq}, to {to_seq}, limit {limit}")
        parts: list[bytes] = [b""]
        size = _str(queue, parts) + _ostr(epoch, parts)
        parts[0] = _READ_RANGE.pack(_READ_RANGE.size - 4 + size, FrameType.READ_RANGE, request_id, from_seq,
                                    _opt_i64(to_seq), _opt_i64(limit), _READ_RANGE_COLUMNAR if columnar else 0)
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("READ_RANGE", exc)


def _range_entry(entry: RangeEntry, parts: list[bytes]) -> int:
    parts.append(_RANGE_ENTRY.pack(entry[0], entry[2]))
    return _RANGE_ENTRY.size + _message(entry[1], parts)


def encode_range_result(request_id: int, epoch: str, next_seq: int, entries: Sequence[RangeEntry],
                        last: bool = True) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = _str(epoch, parts)
        for entry in entries:
            size += _range_entry(entry, parts)
        parts[0] = _RANGE_RESULT.pack(_RANGE_RESULT.size - 4 + size, FrameType.RANGE_RESULT, request_id,
                                      1 if last else 0, next_seq, len(entries))
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("RANGE_RESULT", exc)


def encode_range_results(request_id: int, epoch: str, next_seq: int, entries: Iterable[RangeEntry],
                         max_frame_size: int) -> list[bytes]:
    """A range read's answer as RANGE_RESULT frames of at most ``max_frame_size`` bytes each (the last flagged)."""
    frames: list[bytes] = []
    head = _RANGE_RESULT.size + 4 + len(epoch.encode())
    room = max_frame_size - head
    parts: list[bytes] = []
    count = size = 0

    def flush(last: bool) -> None:
        epoch_parts: list[bytes] = [b""]
        esize = _str(epoch, epoch_parts)
        epoch_parts[0] = _RANGE_RESULT.pack(_RANGE_RESULT.size - 4 + esize + size, FrameType.RANGE_RESULT,
                                            request_id, 1 if last else 0, next_seq, count)
        frames.append(b"".join(epoch_parts + parts))

    for entry in entries:
        one: list[bytes] = []
        try:
            n = _range_entry(entry, one)
        except _ENCODE_FAILURES as exc:
            _local("RANGE_RESULT", exc)
        if n > room:
            raise LocalProtocolError(f"message {entry[1].message_id} ({n} bytes) does not fit in a frame of "
                                     f"{max_frame_size} bytes", size=n, maximum=max_frame_size)
        if count and size + n > room:
            flush(False)
            parts, count, size = [], 0, 0
        parts.extend(one)
        count += 1
        size += n
    flush(True)
    return frames


def _le(values: array[int]) -> bytes:
    if _BIG_ENDIAN:
        values.byteswap()
    return values.tobytes()


def _offsets(lengths: Iterable[int]) -> bytes:
    return _le(array("i", itertools.accumulate(lengths, initial=0)))


def range_columns(request_id: int, epoch: str, next_seq: int, seqs: Sequence[int], messages: Sequence[Message],
                  redelivery_counters: Sequence[int], last: bool = True) -> RangeColumns:
    """The columnar form of a range read's messages (see :class:`RangeColumns`), from parallel lists."""
    ids = [m.message_id.encode() for m in messages]
    bodies = [b.encode() if isinstance(b, str) else b for b in (m.body for m in messages)]
    flags = bytes([(1 if type(m.body) is str else 0) | (2 if m.persistent else 0) for m in messages])
    prop_counts: list[int] = []
    keys: list[bytes] = []
    values: list[bytes] = []
    nulls = bytearray()
    for m in messages:
        if m.properties or m.correlation_id is not None or m.type is not None or m.reply_to is not None or (
                m.group_id is not None):
            pairs = string_properties(m)
            for k, v in pairs:
                keys.append(k.encode())
                values.append(b"" if v is None else v.encode())
                nulls.append(v is None)
            prop_counts.append(len(pairs))
        else:
            prop_counts.append(0)
    return RangeColumns(
        request_id, epoch, next_seq, len(messages),
        seq=_le(array("q", seqs)),
        redelivery_counter=_le(array("i", redelivery_counters)),
        priority=_le(array("i", [m.priority for m in messages])),
        timestamp=_le(array("q", [round(m.timestamp * 1_000_000) for m in messages])),
        flags=flags,
        id_offsets=_offsets(map(len, ids)), id_data=b"".join(ids),
        body_offsets=_offsets(map(len, bodies)), body_data=b"".join(bodies),
        prop_offsets=_offsets(prop_counts),
        key_offsets=_offsets(map(len, keys)), key_data=b"".join(keys),
        value_offsets=_offsets(map(len, values)), value_data=b"".join(values),
        value_nulls=bytes(nulls),
        last=last,
    )


def range_columns_of(request_id: int, epoch: str, next_seq: int, entries: Sequence[RangeEntry],
                     last: bool = True) -> RangeColumns:
    """:func:`range_columns` of ``(seq, message, redelivery_counter)`` entries."""
    return range_columns(request_id, epoch, next_seq, [e[0] for e in entries], [e[1] for e in entries],
                         [e[2] for e in entries], last)


def encode_range_columns(frame: RangeColumns) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = _str(frame.epoch, parts)
        for name in _COLUMN_SECTIONS:
            section: bytes = getattr(frame, name)
            parts.append(_LEN.pack(len(section)))
            parts.append(section)
            size += 4 + len(section)
        parts[0] = _RANGE_COLUMNS.pack(_RANGE_COLUMNS.size - 4 + size, FrameType.RANGE_COLUMNS, frame.request_id,
                                       1 if frame.last else 0, frame.next_seq, frame.count)
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("RANGE_COLUMNS", exc)


def encode_range_columns_results(request_id: int, epoch: str, next_seq: int, seqs: Sequence[int],
                                 messages: Sequence[Message], redelivery_counters: Sequence[int],
                                 max_frame_size: int) -> list[bytes]:
    """A columnar range read's answer as RANGE_COLUMNS frames of at most ``max_frame_size`` bytes each (the messages
    are halved until each part fits)."""
    frames: list[bytes] = []

    def add(lo: int, hi: int, last: bool) -> None:
        frame = encode_range_columns(range_columns(request_id, epoch, next_seq, seqs[lo:hi], messages[lo:hi],
                                                   redelivery_counters[lo:hi], last))
        if len(frame) - 4 <= max_frame_size:
            frames.append(frame)
        elif hi - lo == 1:
            raise LocalProtocolError(f"message {messages[lo].message_id} ({len(frame)} bytes) does not fit in a "
                                     f"frame of {max_frame_size} bytes", size=len(frame), maximum=max_frame_size)
        else:
            mid = (lo + hi) // 2
            add(lo, mid, False)
            add(mid, hi, last)

    add(0, len(messages), True)
    return frames


def encode_ack_below(request_id: int, queue: str, cursor: str, seq: int, epoch: str | None = None) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = _str(queue, parts) + _str(cursor, parts) + _ostr(epoch, parts)
        parts[0] = _REQ_Q.pack(_REQ_Q.size - 4 + size, FrameType.ACK_BELOW, request_id, seq)
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("ACK_BELOW", exc)


def encode_cursor_acked(request_id: int, result: CursorAck) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = _str(result.epoch, parts) + _str(result.queue, parts) + _str(result.cursor, parts)
        parts[0] = _CURSOR_ACKED.pack(_CURSOR_ACKED.size - 4 + size, FrameType.CURSOR_ACKED, request_id,
                                      result.floor, result.removed, result.skipped, result.next_seq)
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("CURSOR_ACKED", exc)


def encode_get_broker_info(request_id: int, queues: Sequence[str] | None = None, cursor: str | None = None) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = _ostr(cursor, parts)
        if queues is not None:
            parts.append(_LEN.pack(len(queues)))
            size += 4
            for name in queues:
                size += _str(name, parts)
        parts[0] = _GET_BROKER_INFO.pack(_GET_BROKER_INFO.size - 4 + size, FrameType.GET_BROKER_INFO, request_id,
                                         0 if queues is None else 1)
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("GET_BROKER_INFO", exc)


def encode_broker_info(request_id: int, info: BrokerInfo) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = _str(info.epoch, parts) + _str(info.name, parts)
        for p in info.queues:
            size += _str(p.queue, parts) + _POSITION.size
            parts.append(_POSITION.pack(p.first_seq, p.next_seq, p.size, _opt_i64(p.cursor_floor)))
        parts[0] = _BROKER_INFO.pack(_BROKER_INFO.size - 4 + size, FrameType.BROKER_INFO, request_id,
                                     len(info.queues))
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("BROKER_INFO", exc)


def encode_publish(request_id: int, messages: Sequence[Message], dedupe: bool = False) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = 0
        for m in messages:
            size += _message(m, parts)
        parts[0] = _PUBLISH.pack(_PUBLISH.size - 4 + size, FrameType.PUBLISH, request_id, 1 if dedupe else 0,
                                 len(messages))
        return b"".join(parts)
    except _ENCODE_FAILURES as exc:
        _local("PUBLISH", exc)


def encode_published(request_id: int, result: PublishResult) -> bytes:
    try:
        return _PUBLISHED.pack(_PUBLISHED.size - 4, FrameType.PUBLISHED, request_id, result.accepted,
                               result.duplicates)
    except _ENCODE_FAILURES as exc:
        _local("PUBLISHED", exc)


def encode(frame: Frame) -> bytes:
    """Any frame to bytes (the ``encode_*`` functions are the fast path)."""
    match frame:
        case Dispatch():
            return encode_dispatch(frame)
        case MessageAck():
            return encode_ack(frame)
        case Send():
            return encode_send(frame.request_id, frame.message, frame.transaction_id, frame.receipt)
        case Handshake():
            return encode_handshake(frame.version)
        case Hello():
            return encode_hello(frame.request_id, frame.client_id, frame.user, frame.password)
        case Connected():
            return encode_connected(frame.request_id, frame.connection_id, frame.broker_name)
        case AddConsumer():
            return encode_add_consumer(frame.request_id, frame.info)
        case ConsumerAdded():
            return encode_consumer_added(frame.request_id, frame.consumer_id)
        case RemoveConsumer():
            return encode_remove_consumer(frame.request_id, frame.consumer_id, frame.last_delivered_seq)
        case Ok():
            return encode_ok(frame.request_id)
        case Error():
            return encode_error(frame.request_id, frame.code, frame.message, frame.fatal)
        case Pull():
            return encode_pull(frame.consumer_id, frame.timeout)
        case Begin():
            return encode_begin(frame.transaction_id)
        case Commit():
            return encode_commit(frame.request_id, frame.transaction_id)
        case Rollback():
            return encode_rollback(frame.request_id, frame.transaction_id)
        case Browse():
            return encode_browse(frame.request_id, frame.queue)
        case BrowseResult():
            return encode_browse_result(frame.request_id, frame.messages, frame.last)
        case GetQueueStatistics():
            return encode_get_queue_statistics(frame.request_id, frame.queue)
        case QueueStatisticsResult():
            return encode_queue_statistics(frame.request_id, frame.statistics)
        case ListQueues():
            return encode_list_queues(frame.request_id)
        case QueueList():
            return encode_queue_list(frame.request_id, frame.queues)
        case Close():
            return encode_close(frame.request_id, frame.last_delivered_seq)
        case ReadRange():
            return encode_read_range(frame.request_id, frame.queue, frame.from_seq, frame.to_seq, frame.limit,
                                     frame.epoch, frame.columnar)
        case RangeColumns():
            return encode_range_columns(frame)
        case RangeResult():
            return encode_range_result(frame.request_id, frame.epoch, frame.next_seq, frame.entries, frame.last)
        case AckBelow():
            return encode_ack_below(frame.request_id, frame.queue, frame.cursor, frame.seq, frame.epoch)
        case CursorAcked():
            return encode_cursor_acked(frame.request_id, frame.result)
        case GetBrokerInfo():
            return encode_get_broker_info(frame.request_id, frame.queues, frame.cursor)
        case BrokerInfoResult():
            return encode_broker_info(frame.request_id, frame.info)
        case Publish():
            return encode_publish(frame.request_id, frame.messages, frame.dedupe)
        case Published():
            return encode_published(frame.request_id, frame.result)
        case Purge():
            return encode_purge(frame.request_id, frame.queue)
        case Purged():
            return encode_purged(frame.request_id, frame.count)
    raise LocalProtocolError(f"not a frame: {type(frame).__name__}")


# -- decoding -------------------------------------------------------------------------------------------------------


class _Malformed(Exception):
    """A precise description of what is wrong inside one frame (turned into RemoteProtocolError by the decoder)."""


_U32_UNPACK = _U32.unpack_from
#: receive_data: a leftover up to this size is joined with the new bytes into one bytes object (see there)
_JOIN_LIMIT = 64 * 1024
_MSG_UNPACK = _MSG.unpack_from


def _read_str(frame: bytes, pos: int, what: str) -> tuple[str, int]:
    (n,) = _U32_UNPACK(frame, pos)
    pos += 4
    end = pos + n
    if end > len(frame):
        raise _Malformed(f"{what} is truncated: {n} bytes announced, {len(frame) - pos} left")
    return frame[pos:end].decode(), end


def _read_ostr(frame: bytes, pos: int, what: str) -> tuple[str | None, int]:
    (n,) = _U32_UNPACK(frame, pos)
    if n == _NONE:
        return None, pos + 4
    pos += 4
    end = pos + n
    if end > len(frame):
        raise _Malformed(f"{what} is truncated: {n} bytes announced, {len(frame) - pos} left")
    return frame[pos:end].decode(), end


def _read_bool(value: int, what: str) -> bool:
    if value == 0:
        return False
    if value == 1:
        return True
    raise _Malformed(f"{what} must be 0 or 1, not {value}")


Side = Literal["client", "server", "any"]


def _request_and_int(make: Callable[[int, int], Frame]) -> Callable[[bytes], Frame]:
    """The parser of a frame that is a request id and one 64-bit integer (COMMIT, ROLLBACK, CLOSE, PURGED,
    CONSUMER_ADDED): ``make(request_id, value)``."""
    end = 1 + _REQ_Q_BODY.size

    def parse(frame: bytes) -> Frame:
        request_id, value = _REQ_Q_BODY.unpack_from(frame, 1)
        FrameDecoder._done(frame, end)
        return make(request_id, value)

    return parse


def _request_and_queue(make: Callable[[int, str], Frame]) -> Callable[[bytes], Frame]:
    """The parser of a frame that is a request id and a queue name (BROWSE, GET_QUEUE_STATISTICS, PURGE)."""

    def parse(frame: bytes) -> Frame:
        (request_id,) = _U32_UNPACK(frame, 1)
        queue, pos = _read_str(frame, 5, "queue name")
        FrameDecoder._done(frame, pos)
        return make(request_id, queue)

    return parse


class FrameDecoder:
    """Turns a byte stream into frames. ``sender`` says whose frames these are: ``"client"`` (the server decodes
    what clients send), ``"server"`` (a client decodes what the broker sends) or ``"any"``; a frame the other side
    should have sent is a protocol error. The stream must start with a HANDSHAKE frame unless ``handshake=False``.
    With ``encoded``, the encoding of every message received in a SEND frame is kept there for re-dispatch.

    ``receive_data(b"")`` means the peer closed its side: a partly received frame then is an error.
    """

    def __init__(
        self,
        *,
        sender: Side = "any",
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        handshake: bool = True,
        encoded: EncodedMessages | None = None,
    ) -> None:
        if max_frame_size < 64:
            raise ValueError(f"max_frame_size must be at least 64 bytes, not {max_frame_size}")
        self.max_frame_size = max_frame_size
        self.sender = sender
        self._buf: bytes | bytearray = b""
        self._pos = 0
        self._eof = False
        self._need_handshake = handshake
        self._failure: RemoteProtocolError | None = None
        self._destinations: dict[tuple[int, bytes], Destination] = {}
        # the last message's destination and producer: a stream mostly repeats them (no lookup, no decode then)
        self._last_dest: tuple[int, bytes, Destination | None] = (-1, b"", None)
        self._last_producer: tuple[bytes, str] = (b"", "")
        #: where to remember the encoding of each message decoded from a SEND frame
        self.encoded = encoded
        allowed = {"client": CLIENT_FRAMES, "server": SERVER_FRAMES, "any": CLIENT_FRAMES | SERVER_FRAMES}[sender]
        parsers: dict[int, Callable[[bytes], Frame]] = {
            FrameType.HELLO: self._hello,
            FrameType.ADD_CONSUMER: self._add_consumer,
            FrameType.REMOVE_CONSUMER: self._remove_consumer,
            FrameType.SEND: self._send,
            FrameType.ACK: self._ack,
            FrameType.PULL: self._pull,
            FrameType.BEGIN: self._begin,
            FrameType.COMMIT: _request_and_int(Commit),
            FrameType.ROLLBACK: _request_and_int(Rollback),
            FrameType.BROWSE: _request_and_queue(Browse),
            FrameType.GET_QUEUE_STATISTICS: _request_and_queue(GetQueueStatistics),
            FrameType.LIST_QUEUES: self._list_queues,
            FrameType.CLOSE: _request_and_int(Close),
            FrameType.PURGE: _request_and_queue(Purge),
            FrameType.PURGED: _request_and_int(Purged),
            FrameType.CONNECTED: self._connected,
            FrameType.CONSUMER_ADDED: _request_and_int(ConsumerAdded),
            FrameType.OK: self._ok,
            FrameType.ERROR: self._error,
            FrameType.DISPATCH: self._dispatch,
            FrameType.BROWSE_RESULT: self._browse_result,
            FrameType.QUEUE_STATISTICS: self._queue_statistics,
            FrameType.QUEUE_LIST: self._queue_list,
            FrameType.READ_RANGE: self._read_range,
            FrameType.RANGE_RESULT: self._range_result,
            FrameType.RANGE_COLUMNS: self._range_columns,
            FrameType.ACK_BELOW: self._ack_below,
            FrameType.CURSOR_ACKED: self._cursor_acked,
            FrameType.GET_BROKER_INFO: self._get_broker_info,
            FrameType.BROKER_INFO: self._broker_info,
            FrameType.PUBLISH: self._publish,
            FrameType.PUBLISHED: self._published,
        }
        self._parsers = {t: p for t, p in parsers.items() if t in allowed}

    # -- feeding ----------------------------------------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        """Bytes received and not yet decoded."""
        return len(self._buf) - self._pos

    @property
    def failed(self) -> RemoteProtocolError | None:
        return self._failure

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Add bytes read from the stream (empty: the end of the stream)."""
        if self._eof and data:
            raise self._fail(RemoteProtocolError("data received after the end of the stream"))
        if not data:
            self._eof = True
            return
        buf = self._buf
        pos = self._pos
        if pos >= len(buf):
            self._buf = bytes(data)
            self._pos = 0
        elif isinstance(buf, bytearray):
            if pos:
                del buf[:pos]
                self._pos = 0
            buf += data
        elif len(buf) - pos <= _JOIN_LIMIT:
            # a small frame split across two reads (most reads end inside one): joined into bytes, so that every
            # frame of this read is sliced out once; a bytearray would cost a second copy per frame (bytes(buf[a:b]))
            self._buf = buf[pos:] + data
            self._pos = 0
        else:
            # a large frame arriving in pieces: a bytearray grows in place instead of being copied again on every read
            grown = bytearray(memoryview(buf)[pos:])
            grown += data
            self._buf = grown
            self._pos = 0

    # -- decoding ---------------------------------------------------------------------------------------------------

    def _fail(self, error: RemoteProtocolError) -> RemoteProtocolError:
        self._failure = error
        self._buf = b""
        self._pos = 0
        return error

    def _check_failed(self) -> None:
        if self._failure is not None:
            raise RemoteProtocolError(f"the stream already failed: {self._failure}")

    def _handshake(self) -> Handshake | None:
        buf = self._buf
        pos = self._pos
        avail = len(buf) - pos
        expected = _HANDSHAKE_PREFIX
        seen = bytes(buf[pos : pos + min(avail, len(expected))])
        if seen != expected[: len(seen)]:
            raise self._fail(RemoteProtocolError(
                f"not a minibroker peer: the stream must start with a handshake {expected!r}+version, got {seen!r}"))
        if avail < _HANDSHAKE.size:
            if self._eof and avail:
                raise self._fail(RemoteProtocolError("the stream ended inside the handshake"))
            return None
        _, _, _, version = _HANDSHAKE.unpack_from(buf, pos)
        self._pos = pos + _HANDSHAKE.size
        if version != PROTOCOL_VERSION:
            raise self._fail(RemoteProtocolError(
                f"protocol version mismatch: the peer speaks version {version}, this side speaks {PROTOCOL_VERSION}",
                version=version, expected=PROTOCOL_VERSION))
        self._need_handshake = False
        return Handshake(version)

    def next_frame(self) -> Frame | None:
        """The next complete frame, or None when more bytes are needed."""
        if self._failure is not None:
            self._check_failed()
        if self._need_handshake:
            return self._handshake()
        buf = self._buf
        pos = self._pos
        avail = len(buf) - pos
        if avail < 4:
            if self._eof and avail:
                raise self._fail(RemoteProtocolError(f"the stream ended inside a frame header ({avail} bytes)"))
            return None
        (n,) = _U32_UNPACK(buf, pos)
        if n > self.max_frame_size:
            raise self._fail(FrameTooLarge(f"a frame of {n} bytes is larger than the maximum of "
                                           f"{self.max_frame_size} bytes", size=n, maximum=self.max_frame_size))
        if n == 0:
            raise self._fail(RemoteProtocolError("an empty frame (length 0, no frame type)"))
        end = pos + 4 + n
        if end > len(buf):
            if self._eof:
                raise self._fail(RemoteProtocolError(
                    f"the stream ended inside a frame: {n} bytes announced, {avail - 4} received"))
            return None
        ftype = buf[pos + 4]
        frame: bytes = bytes(buf[pos + 4 : end]) if isinstance(buf, bytearray) else buf[pos + 4 : end]
        self._pos = end
        if end == len(buf):
            self._buf = b""
            self._pos = 0
        parser = self._parsers.get(ftype)
        if parser is None:
            raise self._fail(self._unexpected(ftype))
        try:
            return parser(frame)
        except _Malformed as exc:
            detail = str(exc)
        except struct.error as exc:
            detail = f"a field is truncated ({exc})"
        except UnicodeDecodeError as exc:
            detail = f"a string is not valid UTF-8 ({exc.reason} at byte {exc.start})"
        except (ValueError, IndexError, KeyError, TypeError, OverflowError) as exc:
            detail = f"{type(exc).__name__}: {exc}"
        raise self._fail(RemoteProtocolError(f"malformed {FrameType(ftype).name} frame: {detail}",
                                             frame_type=ftype))

    def _unexpected(self, ftype: int) -> RemoteProtocolError:
        try:
            name = FrameType(ftype).name
        except ValueError:
            return RemoteProtocolError(f"unknown frame type 0x{ftype:02x}", frame_type=ftype)
        if ftype == FrameType.HANDSHAKE:
            return RemoteProtocolError("a second HANDSHAKE frame", frame_type=ftype)
        owner = "server" if ftype in SERVER_FRAMES else "client"
        return RemoteProtocolError(f"a {name} frame is only sent by the {owner}", frame_type=ftype)

    def next_frames(self) -> list[Frame]:
        """Every complete frame received so far."""
        frames: list[Frame] = []
        append = frames.append
        next_frame = self.next_frame
        while True:
            frame = next_frame()
            if frame is None:
                return frames
            append(frame)

    def __iter__(self) -> Iterator[Frame]:
        while True:
            frame = self.next_frame()
            if frame is None:
                return
            yield frame

    # -- field readers ----------------------------------------------------------------------------------------------

    def _destination(self, kind: int, raw: bytes) -> Destination:
        key = (kind, raw)
        dest = self._destinations.get(key)
        if dest is None:
            if kind > 1:
                raise _Malformed(f"destination kind must be 0 (queue) or 1 (topic), not {kind}")
            name = raw.decode()
            try:
                dest = Destination.parse(("queue://" if kind == 0 else "topic://") + name)
            except MinibrokerError as exc:
                raise _Malformed(str(exc)) from None
            if len(self._destinations) >= 4096:
                self._destinations.clear()
            self._destinations[key] = dest
        return dest

    def _read_dest(self, frame: bytes, pos: int, what: str) -> tuple[Destination, int]:
        kind = frame[pos]
        (n,) = _U32_UNPACK(frame, pos + 1)
        pos += 5
        end = pos + n
        if end > len(frame):
            raise _Malformed(f"{what} is truncated: {n} bytes announced, {len(frame) - pos} left")
        return self._destination(kind, frame[pos:end]), end

    def _read_message(self, frame: bytes, pos: int) -> tuple[Message, int]:
        (flags, priority, kind, opt, timestamp, expiration, group_seq, producer_seq, n_id, n_dest, n_pid,
         n_body) = _MSG_UNPACK(frame, pos)
        pos += _MSG.size
        end = pos + n_id + n_dest + n_pid + n_body
        if end > len(frame):
            raise _Malformed(f"message is truncated: {end - pos} bytes announced, {len(frame) - pos} left")
        if flags & ~_MSG_FLAGS or opt & ~_OPT_ALL:
            raise _Malformed(f"unknown message flags 0x{flags:02x}/0x{opt:02x}")
        if priority > 9:
            raise _Malformed(f"message priority must be 0..9, not {priority}")
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
        body = raw.decode() if flags & _MSG_TEXT else raw
        pos = end
        correlation_id = type_ = group_id = None
        reply_to = original = None
        if opt:
            if opt & _OPT_CORRELATION:
                correlation_id, pos = _read_str(frame, pos, "correlation id")
            if opt & _OPT_REPLY_TO:
                reply_to, pos = self._read_dest(frame, pos, "reply-to")
            if opt & _OPT_TYPE:
                type_, pos = _read_str(frame, pos, "message type")
            if opt & _OPT_GROUP:
                group_id, pos = _read_str(frame, pos, "group id")
            if opt & _OPT_ORIGINAL:
                original, pos = self._read_dest(frame, pos, "original destination")
        properties: dict[str, PropertyValue]
        if flags & _MSG_PROPERTIES:
            properties, pos = _read_properties(frame, pos)
        else:
            properties = {}
        message = Message(message_id, dest, body, properties, priority, bool(flags & _MSG_PERSISTENT), timestamp,
                          expiration, correlation_id, reply_to, type_, group_id, group_seq, producer_id,
                          producer_seq, original)
        return message, pos

    @staticmethod
    def _done(frame: bytes, pos: int) -> None:
        if pos != len(frame):
            raise _Malformed(f"{len(frame) - pos} unexpected bytes after the last field")

    # -- one parser per frame type (``frame`` starts with the type byte) --------------------------------------------

    def _send(self, frame: bytes) -> Send:
        request_id, flags, txn = _SEND_BODY.unpack_from(frame, 1)
        if flags & ~3:
            raise _Malformed(f"unknown SEND flags 0x{flags:02x}")
        message, pos = self._read_message(frame, _SEND_BODY.size + 1)
        if pos != len(frame):
            self._done(frame, pos)
        if self.encoded is not None:
            self.encoded.put(message, frame[_SEND_BODY.size + 1 :])
        return Send(request_id, message, txn if flags & _SEND_TXN else None, bool(flags & _SEND_RECEIPT))

    def _dispatch(self, frame: bytes) -> Dispatch:
        consumer_id, seq, counter, flags = _DISPATCH_BODY.unpack_from(frame, 1)
        if flags & ~3:
            raise _Malformed(f"unknown DISPATCH flags 0x{flags:02x}")
        message = None
        if flags & _DISPATCH_MESSAGE:
            message, pos = self._read_message(frame, _DISPATCH_BODY.size + 1)
            if pos != len(frame):
                self._done(frame, pos)
        elif len(frame) != _DISPATCH_BODY.size + 1:
            self._done(frame, _DISPATCH_BODY.size + 1)
        return Dispatch(consumer_id, message, seq, counter, bool(flags & _DISPATCH_GROUP_FIRST))

    def _ack(self, frame: bytes) -> MessageAck:
        consumer_id, ack_type, flags, count, txn = _ACK_BODY.unpack_from(frame, 1)
        if ack_type >= len(_ACK_TYPES):
            raise _Malformed(f"unknown ack type {ack_type}")
        if flags & ~7:
            raise _Malformed(f"unknown ACK flags 0x{flags:02x}")
        last, pos = _read_str(frame, _ACK_BODY.size + 1, "last message id")
        first = cause = None
        if flags & _ACK_FIRST:
            first, pos = _read_str(frame, pos, "first message id")
        if flags & _ACK_POISON:
            cause, pos = _read_str(frame, pos, "poison cause")
        if pos != len(frame):
            self._done(frame, pos)
        return MessageAck(consumer_id, _ACK_TYPES[ack_type], last, first, count,
                          txn if flags & _ACK_TXN else None, cause)

    def _hello(self, frame: bytes) -> Hello:
        (request_id,) = _U32_UNPACK(frame, 1)
        client_id, pos = _read_ostr(frame, 5, "client id")
        user = password = None
        if pos != len(frame):  # the optional credentials
            user, pos = _read_ostr(frame, pos, "user")
            password, pos = _read_ostr(frame, pos, "password")
        self._done(frame, pos)
        return Hello(request_id, client_id, user, password)

    def _connected(self, frame: bytes) -> Connected:
        request_id, connection_id = _REQ_Q_BODY.unpack_from(frame, 1)
        name, pos = _read_str(frame, 1 + _REQ_Q_BODY.size, "broker name")
        self._done(frame, pos)
        return Connected(request_id, connection_id, name)

    def _add_consumer(self, frame: bytes) -> AddConsumer:
        request_id, prefetch, priority, session_id, flags, kind = _ADD_CONSUMER_BODY.unpack_from(frame, 1)
        if flags & ~15:
            raise _Malformed(f"unknown ADD_CONSUMER flags 0x{flags:02x}")
        (n,) = _U32_UNPACK(frame, 1 + _ADD_CONSUMER_BODY.size)
        pos = 5 + _ADD_CONSUMER_BODY.size
        end = pos + n
        if end > len(frame):
            raise _Malformed(f"destination is truncated: {n} bytes announced, {len(frame) - pos} left")
        dest = self._destination(kind, frame[pos:end])
        selector = None
        if flags & _CI_SELECTOR:
            selector, end = _read_str(frame, end, "selector")
        self._done(frame, end)
        info = ConsumerInfo(dest, prefetch, selector, priority, bool(flags & _CI_EXCLUSIVE),
                            bool(flags & _CI_BROWSER), bool(flags & _CI_NO_LOCAL), session_id)
        return AddConsumer(request_id, info)

    def _remove_consumer(self, frame: bytes) -> RemoveConsumer:
        request_id, consumer_id, last = _REMOVE_CONSUMER_BODY.unpack_from(frame, 1)
        self._done(frame, 1 + _REMOVE_CONSUMER_BODY.size)
        return RemoveConsumer(request_id, consumer_id, last)

    def _ok(self, frame: bytes) -> Ok:
        (request_id,) = _U32_UNPACK(frame, 1)
        self._done(frame, 5)
        return Ok(request_id)

    def _error(self, frame: bytes) -> Error:
        request_id, fatal = _ERROR_BODY.unpack_from(frame, 1)
        code, pos = _read_str(frame, 1 + _ERROR_BODY.size, "error code")
        message, pos = _read_str(frame, pos, "error message")
        self._done(frame, pos)
        return Error(request_id, code, message, _read_bool(fatal, "the fatal flag"))

    def _pull(self, frame: bytes) -> Pull:
        consumer_id, timeout = _PULL_BODY.unpack_from(frame, 1)
        self._done(frame, 1 + _PULL_BODY.size)
        return Pull(consumer_id, timeout)

    def _begin(self, frame: bytes) -> Begin:
        (txn,) = _I64.unpack_from(frame, 1)
        self._done(frame, 9)
        return Begin(txn)

    def _list_queues(self, frame: bytes) -> ListQueues:
        (request_id,) = _U32_UNPACK(frame, 1)
        self._done(frame, 5)
        return ListQueues(request_id)

    def _browse_result(self, frame: bytes) -> BrowseResult:
        request_id, last, count = _BROWSE_RESULT_BODY.unpack_from(frame, 1)
        pos = 1 + _BROWSE_RESULT_BODY.size
        if count * _MSG.size > len(frame) - pos:
            raise _Malformed(f"{count} messages announced, {len(frame) - pos} bytes left")
        messages = []
        for _ in range(count):
            message, pos = self._read_message(frame, pos)
            messages.append(message)
        self._done(frame, pos)
        return BrowseResult(request_id, tuple(messages), _read_bool(last, "the last flag"))

    def _queue_statistics(self, frame: bytes) -> QueueStatisticsResult:
        request_id, present = _QUEUE_STATS_BODY.unpack_from(frame, 1)
        pos = 1 + _QUEUE_STATS_BODY.size
        stats = None
        if _read_bool(present, "the present flag"):
            stats, pos = _read_stats(frame, pos)
        self._done(frame, pos)
        return QueueStatisticsResult(request_id, stats)

    def _queue_list(self, frame: bytes) -> QueueList:
        request_id, count = _QUEUE_LIST_BODY.unpack_from(frame, 1)
        pos = 1 + _QUEUE_LIST_BODY.size
        if count * (4 + _STATS.size) > len(frame) - pos:
            raise _Malformed(f"{count} queues announced, {len(frame) - pos} bytes left")
        queues = []
        for _ in range(count):
            stats, pos = _read_stats(frame, pos)
            queues.append(stats)
        self._done(frame, pos)
        return QueueList(request_id, tuple(queues))

    # -- replayable reads -------------------------------------------------------------------------------------------

    def _read_range(self, frame: bytes) -> ReadRange:
        request_id, from_seq, to_seq, limit, flags = _READ_RANGE_BODY.unpack_from(frame, 1)
        if from_seq < 0 or to_seq < -1 or limit < -1:
            raise _Malformed(f"negative range bounds: from {from_seq}, to {to_seq}, limit {limit}")
        if flags & ~_READ_RANGE_COLUMNAR:
            raise _Malformed(f"unknown READ_RANGE flags 0x{flags:02x}")
        queue, pos = _read_str(frame, 1 + _READ_RANGE_BODY.size, "queue name")
        epoch, pos = _read_ostr(frame, pos, "epoch")
        self._done(frame, pos)
        return ReadRange(request_id, queue, from_seq, None if to_seq == -1 else to_seq,
                         None if limit == -1 else limit, epoch, bool(flags & _READ_RANGE_COLUMNAR))

    def _range_columns(self, frame: bytes) -> RangeColumns:
        request_id, last, next_seq, count = _RANGE_RESULT_BODY.unpack_from(frame, 1)
        epoch, pos = _read_str(frame, 1 + _RANGE_RESULT_BODY.size, "epoch")
        sections: dict[str, bytes] = {}
        for name in _COLUMN_SECTIONS:
            (n,) = _U32_UNPACK(frame, pos)
            pos += 4
            end = pos + n
            if end > len(frame):
                raise _Malformed(f"column {name} is truncated: {n} bytes announced, {len(frame) - pos} left")
            sections[name] = frame[pos:end]
            pos = end
        self._done(frame, pos)
        if len(sections["key_offsets"]) < 4 or len(sections["key_offsets"]) % 4:
            raise _Malformed("column key_offsets is not a list of offsets")
        nprops = len(sections["key_offsets"]) // 4 - 1
        expected = {"seq": 8 * count, "redelivery_counter": 4 * count, "priority": 4 * count,
                    "timestamp": 8 * count, "flags": count, "id_offsets": 4 * (count + 1),
                    "body_offsets": 4 * (count + 1), "prop_offsets": 4 * (count + 1),
                    "value_offsets": 4 * (nprops + 1), "value_nulls": nprops}
        for name, size in expected.items():
            if len(sections[name]) != size:
                raise _Malformed(f"column {name} holds {len(sections[name])} bytes, {size} expected for {count} "
                                 "messages")
        for offsets, data, total in (("id_offsets", "id_data", 0), ("body_offsets", "body_data", 0),
                                     ("prop_offsets", "", nprops), ("key_offsets", "key_data", 0),
                                     ("value_offsets", "value_data", 0)):
            raw = sections[offsets]
            first = _LE_I32.unpack_from(raw, 0)[0]
            final = _LE_I32.unpack_from(raw, len(raw) - 4)[0]
            want = len(sections[data]) if data else total
            if first != 0 or final != want:
                raise _Malformed(f"column {offsets} runs from {first} to {final}, not from 0 to {want}")
        return RangeColumns(request_id, epoch, next_seq, count, **sections, last=_read_bool(last, "the last flag"))

    def _range_result(self, frame: bytes) -> RangeResult:
        request_id, last, next_seq, count = _RANGE_RESULT_BODY.unpack_from(frame, 1)
        epoch, pos = _read_str(frame, 1 + _RANGE_RESULT_BODY.size, "epoch")
        if count * (_RANGE_ENTRY.size + _MSG.size) > len(frame) - pos:
            raise _Malformed(f"{count} entries announced, {len(frame) - pos} bytes left")
        entries = []
        unpack = _RANGE_ENTRY.unpack_from
        read_message = self._read_message
        for _ in range(count):
            seq, counter = unpack(frame, pos)
            message, pos = read_message(frame, pos + 16)
            entries.append(RangeEntry(seq, message, counter))
        self._done(frame, pos)
        return RangeResult(request_id, epoch, next_seq, tuple(entries), _read_bool(last, "the last flag"))

    def _ack_below(self, frame: bytes) -> AckBelow:
        request_id, seq = _REQ_Q_BODY.unpack_from(frame, 1)
        queue, pos = _read_str(frame, 1 + _REQ_Q_BODY.size, "queue name")
        cursor, pos = _read_str(frame, pos, "cursor name")
        epoch, pos = _read_ostr(frame, pos, "epoch")
        self._done(frame, pos)
        return AckBelow(request_id, queue, cursor, seq, epoch)

    def _cursor_acked(self, frame: bytes) -> CursorAcked:
        request_id, floor, removed, skipped, next_seq = _CURSOR_ACKED_BODY.unpack_from(frame, 1)
        epoch, pos = _read_str(frame, 1 + _CURSOR_ACKED_BODY.size, "epoch")
        queue, pos = _read_str(frame, pos, "queue name")
        cursor, pos = _read_str(frame, pos, "cursor name")
        self._done(frame, pos)
        return CursorAcked(request_id, CursorAck(epoch, queue, cursor, floor, removed, skipped, next_seq))

    def _get_broker_info(self, frame: bytes) -> GetBrokerInfo:
        request_id, flags = _GET_BROKER_INFO_BODY.unpack_from(frame, 1)
        if flags & ~1:
            raise _Malformed(f"unknown GET_BROKER_INFO flags 0x{flags:02x}")
        cursor, pos = _read_ostr(frame, 1 + _GET_BROKER_INFO_BODY.size, "cursor name")
        queues: tuple[str, ...] | None = None
        if flags & 1:
            (count,) = _U32_UNPACK(frame, pos)
            pos += 4
            if count * 4 > len(frame) - pos:
                raise _Malformed(f"{count} queue names announced, {len(frame) - pos} bytes left")
            names = []
            for _ in range(count):
                name, pos = _read_str(frame, pos, "queue name")
                names.append(name)
            queues = tuple(names)
        self._done(frame, pos)
        return GetBrokerInfo(request_id, queues, cursor)

    def _broker_info(self, frame: bytes) -> BrokerInfoResult:
        request_id, count = _BROKER_INFO_BODY.unpack_from(frame, 1)
        epoch, pos = _read_str(frame, 1 + _BROKER_INFO_BODY.size, "epoch")
        name, pos = _read_str(frame, pos, "broker name")
        if count * (4 + _POSITION.size) > len(frame) - pos:
            raise _Malformed(f"{count} queues announced, {len(frame) - pos} bytes left")
        queues = []
        for _ in range(count):
            queue, pos = _read_str(frame, pos, "queue name")
            first, next_seq, size, floor = _POSITION.unpack_from(frame, pos)
            pos += _POSITION.size
            queues.append(QueuePosition(queue, first, next_seq, size, None if floor == -1 else floor))
        self._done(frame, pos)
        return BrokerInfoResult(request_id, BrokerInfo(epoch, name, tuple(queues)))

    def _publish(self, frame: bytes) -> Publish:
        request_id, flags, count = _PUBLISH_BODY.unpack_from(frame, 1)
        if flags & ~1:
            raise _Malformed(f"unknown PUBLISH flags 0x{flags:02x}")
        pos = 1 + _PUBLISH_BODY.size
        if count * _MSG.size > len(frame) - pos:
            raise _Malformed(f"{count} messages announced, {len(frame) - pos} bytes left")
        messages = []
        for _ in range(count):
            message, pos = self._read_message(frame, pos)
            messages.append(message)
        self._done(frame, pos)
        return Publish(request_id, tuple(messages), bool(flags & 1))

    def _published(self, frame: bytes) -> Published:
        request_id, accepted, duplicates = _PUBLISHED_BODY.unpack_from(frame, 1)
        self._done(frame, 1 + _PUBLISHED_BODY.size)
        return Published(request_id, PublishResult(accepted, duplicates))


# the same layouts as the encoders', without the length and type prefix
_SEND_BODY = struct.Struct(">IBq")
_DISPATCH_BODY = struct.Struct(">qqqB")
_ACK_BODY = struct.Struct(">qBBqq")
_REQ_Q_BODY = struct.Struct(">Iq")
_REMOVE_CONSUMER_BODY = struct.Struct(">Iqq")
_ADD_CONSUMER_BODY = struct.Struct(">IiiqBB")
_ERROR_BODY = struct.Struct(">IB")
_PULL_BODY = struct.Struct(">qd")
_BROWSE_RESULT_BODY = struct.Struct(">IBI")
_QUEUE_STATS_BODY = struct.Struct(">IB")
_QUEUE_LIST_BODY = struct.Struct(">II")
_READ_RANGE_BODY = struct.Struct(">IqqqB")
_LE_I32 = struct.Struct("<i")
_RANGE_RESULT_BODY = struct.Struct(">IBqI")
_CURSOR_ACKED_BODY = struct.Struct(">Iqqqq")
_GET_BROKER_INFO_BODY = struct.Struct(">IB")
_BROKER_INFO_BODY = struct.Struct(">II")
_PUBLISH_BODY = struct.Struct(">IBI")
_PUBLISHED_BODY = struct.Struct(">Iqq")


def _read_stats(frame: bytes, pos: int) -> tuple[QueueStatistics, int]:
    name, pos = _read_str(frame, pos, "queue name")
    values = _STATS.unpack_from(frame, pos)
    return QueueStatistics(name, *values), pos + _STATS.size


def _read_properties(frame: bytes, pos: int) -> tuple[dict[str, PropertyValue], int]:
    (count,) = _U32_UNPACK(frame, pos)
    pos += 4
    size = len(frame)
    if count * 5 > size - pos:
        raise _Malformed(f"{count} properties announced, {size - pos} bytes left")
    props: dict[str, PropertyValue] = {}
    for _ in range(count):
        (n,) = _U32_UNPACK(frame, pos)
        pos += 4
        end = pos + n
        if end >= size:
            raise _Malformed(f"property name is truncated: {n} bytes announced, {size - pos} left")
        key = frame[pos:end].decode()
        tag = frame[end]
        pos = end + 1
        value: PropertyValue
        if tag == _P_STR:
            value, pos = _read_str(frame, pos, f"property {key!r}")
        elif tag == _P_INT:
            (value,) = _I64.unpack_from(frame, pos)
            pos += 8
        elif tag == _P_TRUE:
            value = True
        elif tag == _P_FALSE:
            value = False
        elif tag == _P_NONE:
            value = None
        elif tag == _P_FLOAT:
            (value,) = _F64.unpack_from(frame, pos)
            pos += 8
        elif tag in (_P_BYTES, _P_BIGINT):
            (n,) = _U32_UNPACK(frame, pos)
            pos += 4
            end = pos + n
            if end > size:
                raise _Malformed(f"property {key!r} is truncated: {n} bytes announced, {size - pos} left")
            raw = frame[pos:end]
            pos = end
            value = raw if tag == _P_BYTES else int.from_bytes(raw, "big", signed=True)
        else:
            raise _Malformed(f"property {key!r} has an unknown type tag {tag}")
        if key in props:
            raise _Malformed(f"property {key!r} appears twice")
        props[key] = value
    return props, pos
