"""The frames of the minibroker wire protocol: their type codes and the values they carry.

Each direction starts with a HANDSHAKE frame (``b"MBRK"`` + u16 protocol version). Requests carry a u32 request id
that their response echoes. Acks, pulls and begins are fire-and-forget; an error they cause comes back in an ERROR
frame with request id 0. Which side sends which frame, and how each is encoded and parsed, is one row per frame type
in :mod:`minibroker.wire.table`.
"""

from __future__ import annotations

import enum
from typing import TypeAlias

import attrs

from .._core.commands import ConsumerInfo, MessageAck
from .._core.effects import Dispatch
from .._core.queue import QueueStatistics
from .._core.replay import BrokerInfo, CursorAck, PublishResult, RangeEntry
from ..message import Message

MAGIC = b"MBRK"
PROTOCOL_VERSION = 2


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
    CREATE_TEMPORARY = 0x10
    DELETE_TEMPORARY = 0x11
    BROWSE_SELECTED = 0x12
    UNSUBSCRIBE = 0x13
    LIST_TOPICS = 0x14
    PURGE_SELECTED = 0x15
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
    TEMPORARY_CREATED = 0x29
    TOPIC_LIST = 0x2A
    # replayable reads (minibroker._core.replay): client -> server
    READ_RANGE = 0x40
    ACK_BELOW = 0x41
    GET_BROKER_INFO = 0x42
    PUBLISH = 0x43
    ADD_PRODUCER = 0x44
    REMOVE_PRODUCER = 0x45
    KEEP_ALIVE = 0x46
    # ... and their answers, server -> client
    RANGE_RESULT = 0x50
    CURSOR_ACKED = 0x51
    BROKER_INFO = 0x52
    PUBLISHED = 0x53
    RANGE_COLUMNS = 0x54


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
        return (
            f"Hello(request_id={self.request_id}, client_id={self.client_id!r}, user={self.user!r}, "
            f"password={password!r})"
        )


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
    """Ask for the queues named after ``after`` ("" for the first), a page at a time (QUEUE_LIST; an empty one
    ends the listing), so that a million queues never make one frame."""

    request_id: int
    after: str = ""


@attrs.frozen(slots=True)
class KeepAlive:
    """The client is alive, though it has had nothing to say (ActiveMQ's KeepAliveInfo): the broker closes a
    logged-in connection it has heard nothing from for its idle timeout."""

    request_id: int = 0


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
class PurgeSelected:
    """Remove the waiting messages of a queue that a selector matches (answered by PURGED)."""

    request_id: int
    queue: str
    selector: str


@attrs.frozen(slots=True)
class Purged:
    request_id: int
    count: int


@attrs.frozen(slots=True)
class BrowseSelected:
    """BROWSE through a message selector: only matching messages, at most the queue's browse page of them."""

    request_id: int
    queue: str
    selector: str


@attrs.frozen(slots=True)
class Unsubscribe:
    """Remove the connection's durable subscription ``name`` (answered by OK)."""

    request_id: int
    name: str


@attrs.frozen(slots=True)
class AddProducer:
    """A producer comes, for ``destination`` ("" for an anonymous one): counted and advised (no answer: the stream
    keeps it before the producer's first send, as ActiveMQ's ProducerInfo)."""

    producer_id: int
    destination: str


@attrs.frozen(slots=True)
class RemoveProducer:
    """The producer ``producer_id`` (of ``destination``) goes (no answer)."""

    producer_id: int
    destination: str


@attrs.frozen(slots=True)
class ListTopics:
    """Ask for the topics and durable subscriptions (an administrator's view, answered by TOPIC_LIST)."""

    request_id: int
    #: unused; kept so the frame has the request-and-name layout of its neighbours
    name: str = ""


@attrs.frozen(slots=True)
class TopicList:
    """The topics' statistics and the durable subscriptions, as JSON (an administrative answer, not a hot path:
    ``{"topics": [[name, enqueued, dequeued, consumers], ...], "durables": [[client id, name, topic, selector,
    active, pending], ...]}``)."""

    request_id: int
    json: str


# -- temporary destinations -------------------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class CreateTemporary:
    """Make a temporary destination owned by this connection: ``spec`` is ``temp-queue://PREFIX`` or
    ``temp-topic://PREFIX``, the prefix being the client's connection name (answered by TEMPORARY_CREATED)."""

    request_id: int
    spec: str


@attrs.frozen(slots=True)
class DeleteTemporary:
    """Delete one of this connection's temporary destinations (``temp-queue://NAME``; answered by OK)."""

    request_id: int
    destination: str


@attrs.frozen(slots=True)
class TemporaryCreated:
    request_id: int
    destination: str


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
    Handshake
    | Hello
    | Connected
    | AddConsumer
    | ConsumerAdded
    | RemoveConsumer
    | Send
    | Ok
    | Error
    | Dispatch
    | MessageAck
    | Pull
    | Begin
    | Commit
    | Rollback
    | Browse
    | BrowseResult
    | GetQueueStatistics
    | QueueStatisticsResult
    | ListQueues
    | KeepAlive
    | QueueList
    | Close
    | ReadRange
    | RangeResult
    | AckBelow
    | CursorAcked
    | GetBrokerInfo
    | BrokerInfoResult
    | Publish
    | Published
    | Purge
    | PurgeSelected
    | Purged
    | RangeColumns
    | BrowseSelected
    | Unsubscribe
    | AddProducer
    | RemoveProducer
    | ListTopics
    | TopicList
    | CreateTemporary
    | DeleteTemporary
    | TemporaryCreated
)
