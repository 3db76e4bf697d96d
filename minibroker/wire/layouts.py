"""Every fixed part of a frame, declared once as a :class:`struct.Struct`, with the flag bits that go in them.

Layout of every frame::

    u32 length (big-endian, the bytes after this field) | u8 frame type | fields...

A ``*_BODY`` layout is a frame's fixed fields after the type byte (what a parser unpacks at offset 1); the layout
of the same name without ``_BODY`` is derived from it with the length and type in front (what an encoder packs),
so that the two can never disagree. Strings are u32 length + UTF-8 (length ``NONE`` means None where a field is
optional); integers are big-endian, 64-bit signed unless said otherwise.
"""

from __future__ import annotations

import struct
import sys

from .._core.commands import AckType
from ..message import DestinationKind
from .frames import MAGIC, FrameType

BIG_ENDIAN = sys.byteorder == "big"

LEN = struct.Struct(">I")
HEAD = struct.Struct(">IB")  # frame length, frame type
U32 = LEN
I64 = struct.Struct(">q")
F64 = struct.Struct(">d")
LE_I32 = struct.Struct("<i")
NONE = 0xFFFFFFFF
NONE_BYTES = LEN.pack(NONE)
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def _framed(body: struct.Struct) -> struct.Struct:
    """``body`` with the frame length and type in front: the layout an encoder packs in one call."""
    return struct.Struct(">IB" + body.format.lstrip(">"))


# message: flags, priority, destination kind, optional-field mask, timestamp, expiration, group_seq, producer_seq,
# then the lengths of message_id, destination name, producer_id and body
MSG = struct.Struct(">BBBBddqqIIII")
MSG_PERSISTENT = 1
MSG_TEXT = 2
MSG_PROPERTIES = 4
#: the body is a MapMessage's map, encoded as properties are (values.py)
MSG_MAP = 8
#: the body is a StreamMessage's values, encoded as a map of their positions ("0", "1", ...)
MSG_STREAM = 16
#: the body is an ObjectMessage's serialized object (its bytes)
MSG_OBJECT = 32
MSG_FLAGS = 63
OPT_CORRELATION = 1
OPT_REPLY_TO = 2
OPT_TYPE = 4
OPT_GROUP = 8
OPT_ORIGINAL = 16
OPT_ALL = 31

# -- the fixed fields of each frame after its type byte -------------------------------------------------------------
HANDSHAKE_BODY = struct.Struct(">4sH")  # magic, protocol version
REQ_BODY = U32  # request id
REQ_Q_BODY = struct.Struct(">Iq")  # request id + one int64
REMOVE_CONSUMER_BODY = struct.Struct(">Iqq")
SEND_BODY = struct.Struct(">IBq")  # request id, flags, transaction id
DISPATCH_BODY = struct.Struct(">qqqBq")  # consumer id, seq, redelivery counter, flags, broker sequence id
ACK_BODY = struct.Struct(">qBBqq")  # consumer id, ack type, flags, message count, transaction id
PULL_BODY = struct.Struct(">qd")
BEGIN_BODY = I64
ADD_CONSUMER_BODY = struct.Struct(">IiiqBB")  # request id, prefetch, priority, session id, flags, destination kind
ERROR_BODY = struct.Struct(">IB")  # request id, fatal
BROWSE_RESULT_BODY = struct.Struct(">IBI")  # request id, last, count
QUEUE_STATS_BODY = struct.Struct(">IB")  # request id, present
QUEUE_LIST_BODY = struct.Struct(">II")  # request id, count
READ_RANGE_BODY = struct.Struct(">IqqqB")  # ..., from, to (-1: none), limit (-1: none), flags; then queue, epoch
RANGE_RESULT_BODY = struct.Struct(">IBqI")  # ..., last, next seq, count; then epoch, then per entry RANGE_ENTRY+message
CURSOR_ACKED_BODY = struct.Struct(">Iqqqq")  # ..., floor, removed, skipped, next seq; then epoch, queue, cursor
GET_BROKER_INFO_BODY = struct.Struct(">IB")  # ..., flags (1: a queue list follows the cursor)
BROKER_INFO_BODY = struct.Struct(">II")  # ..., count; then epoch, name, per queue: name + POSITION
PUBLISH_BODY = struct.Struct(">IBI")  # ..., flags (1: dedupe), count; then the messages
PUBLISHED_BODY = struct.Struct(">Iqq")  # ..., accepted, duplicates

# -- the same with the length and type in front ---------------------------------------------------------------------
HANDSHAKE = _framed(HANDSHAKE_BODY)
HANDSHAKE_PREFIX = HEAD.pack(HANDSHAKE.size - 4, FrameType.HANDSHAKE) + MAGIC
REQ = _framed(REQ_BODY)
REQ_Q = _framed(REQ_Q_BODY)
CONSUMER_ADDED = REQ_Q
CONNECTED = REQ_Q
REMOVE_CONSUMER = _framed(REMOVE_CONSUMER_BODY)
SEND = _framed(SEND_BODY)
DISPATCH = _framed(DISPATCH_BODY)
ACK = _framed(ACK_BODY)
PULL = _framed(PULL_BODY)
BEGIN = _framed(BEGIN_BODY)
ADD_CONSUMER = _framed(ADD_CONSUMER_BODY)
ERROR = _framed(ERROR_BODY)
BROWSE_RESULT = _framed(BROWSE_RESULT_BODY)
QUEUE_STATS = _framed(QUEUE_STATS_BODY)
QUEUE_LIST = _framed(QUEUE_LIST_BODY)
READ_RANGE = _framed(READ_RANGE_BODY)
RANGE_RESULT = _framed(RANGE_RESULT_BODY)
RANGE_COLUMNS = RANGE_RESULT  # the same head; then the epoch and the column sections (u32 length + bytes each)
CURSOR_ACKED = _framed(CURSOR_ACKED_BODY)
GET_BROKER_INFO = _framed(GET_BROKER_INFO_BODY)
BROKER_INFO = _framed(BROKER_INFO_BODY)
PUBLISH = _framed(PUBLISH_BODY)
PUBLISHED = _framed(PUBLISHED_BODY)

# -- parts inside frames --------------------------------------------------------------------------------------------
STATS = struct.Struct(">qqqqqqq")
RANGE_ENTRY = struct.Struct(">qq")  # seq, redelivery counter
POSITION = struct.Struct(">qqqq")  # first seq, next seq, size, cursor floor (-1: none)

# -- flag bits ------------------------------------------------------------------------------------------------------
SEND_RECEIPT = 1
SEND_TXN = 2
DISPATCH_MESSAGE = 1
DISPATCH_GROUP_FIRST = 2
ACK_FIRST = 1
ACK_TXN = 2
ACK_POISON = 4
CI_EXCLUSIVE = 1
CI_BROWSER = 2
CI_NO_LOCAL = 4
CI_SELECTOR = 8
CI_DURABLE = 16  # a durable subscription's name follows the selector
READ_RANGE_COLUMNAR = 1

QUEUE = DestinationKind.QUEUE
TOPIC = DestinationKind.TOPIC
ACK_TYPES = tuple(AckType)

# property value tags
P_NONE = 0
P_FALSE = 1
P_TRUE = 2
P_INT = 3
P_FLOAT = 4
P_STR = 5
P_BYTES = 6
P_BIGINT = 7
