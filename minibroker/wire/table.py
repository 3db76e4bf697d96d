"""One row per frame type: its code, its class, who sends it, its encoder and its parser.

The encoder of any frame (:func:`encode`), each side's parsers (:class:`~minibroker.wire.decode.FrameDecoder`) and
the sets of frames each side may send are all read from :data:`ROWS`, so adding a frame type is a class in
:mod:`~minibroker.wire.frames`, an ``encode_*`` and a ``parse_*`` function, and one row here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

import attrs

from .._core.commands import MessageAck
from .._core.effects import Dispatch
from ..errors import LocalProtocolError
from . import encoders as e
from . import replay_encoders as r
from .columns import encode_range_columns, parse_range_columns
from .frames import (
    AckBelow,
    AddConsumer,
    AddProducer,
    Begin,
    BrokerInfoResult,
    Browse,
    BrowseResult,
    BrowseSelected,
    Close,
    Commit,
    Connected,
    ConsumerAdded,
    CreateTemporary,
    CursorAcked,
    DeleteTemporary,
    Error,
    Frame,
    FrameType,
    GetBrokerInfo,
    GetQueueStatistics,
    Handshake,
    Hello,
    KeepAlive,
    ListQueues,
    ListTopics,
    Ok,
    Publish,
    Published,
    Pull,
    Purge,
    Purged,
    PurgeSelected,
    QueueList,
    QueueStatisticsResult,
    RangeColumns,
    RangeResult,
    ReadRange,
    RemoveConsumer,
    RemoveProducer,
    Rollback,
    Send,
    TemporaryCreated,
    TopicList,
    Unsubscribe,
)
from .parsers import FrameParser as P
from .parsers import Parse, request_and_int, request_and_queue, request_queue_and_text

#: who sends a frame type: the client, the server (the broker), or both (the handshake)
Sender = Literal["client", "server", "both"]
F = TypeVar("F")


@attrs.frozen(slots=True)
class Row:
    """How one frame type travels. ``parse`` is None only for the HANDSHAKE, which the decoder reads itself (it
    opens the stream and is never a frame after that)."""

    code: FrameType
    cls: type[Any]
    sender: Sender
    encode: Callable[[Any], bytes]
    parse: Parse | None


def _row(code: FrameType, cls: type[F], sender: Sender, encode: Callable[[F], bytes], parse: Parse | None) -> Row:
    """A row, type-checked: ``encode`` takes a ``cls``."""
    return Row(code, cls, sender, encode, parse)


_T = FrameType
ROWS: tuple[Row, ...] = (
    _row(_T.HANDSHAKE, Handshake, "both", lambda f: e.encode_handshake(f.version), None),
    # client -> server
    _row(
        _T.HELLO,
        Hello,
        "client",
        lambda f: e.encode_hello(f.request_id, f.client_id, f.user, f.password),
        P.parse_hello,
    ),
    _row(
        _T.ADD_CONSUMER,
        AddConsumer,
        "client",
        lambda f: e.encode_add_consumer(f.request_id, f.info),
        P.parse_add_consumer,
    ),
    _row(
        _T.REMOVE_CONSUMER,
        RemoveConsumer,
        "client",
        lambda f: e.encode_remove_consumer(f.request_id, f.consumer_id, f.last_delivered_seq),
        P.parse_remove_consumer,
    ),
    _row(
        _T.SEND,
        Send,
        "client",
        lambda f: e.encode_send(f.request_id, f.message, f.transaction_id, f.receipt),
        P.parse_send,
    ),
    _row(_T.ACK, MessageAck, "client", e.encode_ack, P.parse_ack),
    _row(_T.PULL, Pull, "client", lambda f: e.encode_pull(f.consumer_id, f.timeout), P.parse_pull),
    _row(_T.BEGIN, Begin, "client", lambda f: e.encode_begin(f.transaction_id), P.parse_begin),
    _row(
        _T.COMMIT, Commit, "client", lambda f: e.encode_commit(f.request_id, f.transaction_id), request_and_int(Commit)
    ),
    _row(
        _T.ROLLBACK,
        Rollback,
        "client",
        lambda f: e.encode_rollback(f.request_id, f.transaction_id),
        request_and_int(Rollback),
    ),
    _row(_T.BROWSE, Browse, "client", lambda f: e.encode_browse(f.request_id, f.queue), request_and_queue(Browse)),
    _row(
        _T.GET_QUEUE_STATISTICS,
        GetQueueStatistics,
        "client",
        lambda f: e.encode_get_queue_statistics(f.request_id, f.queue),
        request_and_queue(GetQueueStatistics),
    ),
    _row(
        _T.LIST_QUEUES,
        ListQueues,
        "client",
        lambda f: e.encode_list_queues(f.request_id, f.after),
        request_and_queue(ListQueues),
    ),
    _row(_T.KEEP_ALIVE, KeepAlive, "client", lambda f: e.encode_keep_alive(), P.parse_keep_alive),
    _row(
        _T.CLOSE, Close, "client", lambda f: e.encode_close(f.request_id, f.last_delivered_seq), request_and_int(Close)
    ),
    _row(_T.PURGE, Purge, "client", lambda f: e.encode_purge(f.request_id, f.queue), request_and_queue(Purge)),
    _row(
        _T.PURGE_SELECTED,
        PurgeSelected,
        "client",
        lambda f: e.encode_purge_selected(f.request_id, f.queue, f.selector),
        request_queue_and_text(PurgeSelected),
    ),
    # server -> client
    _row(
        _T.CONNECTED,
        Connected,
        "server",
        lambda f: e.encode_connected(f.request_id, f.connection_id, f.broker_name),
        P.parse_connected,
    ),
    _row(
        _T.CONSUMER_ADDED,
        ConsumerAdded,
        "server",
        lambda f: e.encode_consumer_added(f.request_id, f.consumer_id),
        request_and_int(ConsumerAdded),
    ),
    _row(_T.OK, Ok, "server", lambda f: e.encode_ok(f.request_id), P.parse_ok),
    _row(_T.ERROR, Error, "server", lambda f: e.encode_error(f.request_id, f.code, f.message, f.fatal), P.parse_error),
    _row(_T.DISPATCH, Dispatch, "server", e.encode_dispatch, P.parse_dispatch),
    _row(
        _T.BROWSE_RESULT,
        BrowseResult,
        "server",
        lambda f: e.encode_browse_result(f.request_id, f.messages, f.last),
        P.parse_browse_result,
    ),
    _row(
        _T.QUEUE_STATISTICS,
        QueueStatisticsResult,
        "server",
        lambda f: e.encode_queue_statistics(f.request_id, f.statistics),
        P.parse_queue_statistics,
    ),
    _row(_T.QUEUE_LIST, QueueList, "server", lambda f: e.encode_queue_list(f.request_id, f.queues), P.parse_queue_list),
    _row(_T.PURGED, Purged, "server", lambda f: e.encode_purged(f.request_id, f.count), request_and_int(Purged)),
    # replayable reads: client -> server
    _row(
        _T.READ_RANGE,
        ReadRange,
        "client",
        lambda f: r.encode_read_range(f.request_id, f.queue, f.from_seq, f.to_seq, f.limit, f.epoch, f.columnar),
        P.parse_read_range,
    ),
    _row(
        _T.ACK_BELOW,
        AckBelow,
        "client",
        lambda f: r.encode_ack_below(f.request_id, f.queue, f.cursor, f.seq, f.epoch),
        P.parse_ack_below,
    ),
    _row(
        _T.GET_BROKER_INFO,
        GetBrokerInfo,
        "client",
        lambda f: r.encode_get_broker_info(f.request_id, f.queues, f.cursor),
        P.parse_get_broker_info,
    ),
    _row(
        _T.PUBLISH, Publish, "client", lambda f: r.encode_publish(f.request_id, f.messages, f.dedupe), P.parse_publish
    ),
    # ... and their answers, server -> client
    _row(
        _T.RANGE_RESULT,
        RangeResult,
        "server",
        lambda f: r.encode_range_result(f.request_id, f.epoch, f.next_seq, f.entries, f.last),
        P.parse_range_result,
    ),
    _row(
        _T.CURSOR_ACKED,
        CursorAcked,
        "server",
        lambda f: r.encode_cursor_acked(f.request_id, f.result),
        P.parse_cursor_acked,
    ),
    _row(
        _T.BROKER_INFO,
        BrokerInfoResult,
        "server",
        lambda f: r.encode_broker_info(f.request_id, f.info),
        P.parse_broker_info,
    ),
    _row(_T.PUBLISHED, Published, "server", lambda f: r.encode_published(f.request_id, f.result), P.parse_published),
    _row(_T.RANGE_COLUMNS, RangeColumns, "server", encode_range_columns, parse_range_columns),
    _row(
        _T.BROWSE_SELECTED,
        BrowseSelected,
        "client",
        lambda f: e.encode_browse_selected(f.request_id, f.queue, f.selector),
        request_queue_and_text(BrowseSelected),
    ),
    _row(
        _T.ADD_PRODUCER,
        AddProducer,
        "client",
        lambda f: e.encode_add_producer(f.producer_id, f.destination),
        request_and_queue(AddProducer),
    ),
    _row(
        _T.REMOVE_PRODUCER,
        RemoveProducer,
        "client",
        lambda f: e.encode_remove_producer(f.producer_id, f.destination),
        request_and_queue(RemoveProducer),
    ),
    _row(
        _T.UNSUBSCRIBE,
        Unsubscribe,
        "client",
        lambda f: e.encode_unsubscribe(f.request_id, f.name),
        request_and_queue(Unsubscribe),
    ),
    _row(
        _T.LIST_TOPICS,
        ListTopics,
        "client",
        lambda f: e.encode_list_topics(f.request_id),
        request_and_queue(ListTopics),
    ),
    _row(
        _T.TOPIC_LIST,
        TopicList,
        "server",
        lambda f: e.encode_topic_list(f.request_id, f.json),
        request_and_queue(TopicList),
    ),
    # temporary destinations
    _row(
        _T.CREATE_TEMPORARY,
        CreateTemporary,
        "client",
        lambda f: e.encode_create_temporary(f.request_id, f.spec),
        request_and_queue(CreateTemporary),
    ),
    _row(
        _T.DELETE_TEMPORARY,
        DeleteTemporary,
        "client",
        lambda f: e.encode_delete_temporary(f.request_id, f.destination),
        request_and_queue(DeleteTemporary),
    ),
    _row(
        _T.TEMPORARY_CREATED,
        TemporaryCreated,
        "server",
        lambda f: e.encode_temporary_created(f.request_id, f.destination),
        request_and_queue(TemporaryCreated),
    ),
)

BY_CODE: dict[int, Row] = {row.code: row for row in ROWS}
_ENCODERS: dict[type[Any], Callable[[Any], bytes]] = {row.cls: row.encode for row in ROWS}
#: the frame types each side sends (the handshake is neither: both send it, once, first)
CLIENT_FRAMES = frozenset(row.code for row in ROWS if row.sender == "client")
SERVER_FRAMES = frozenset(row.code for row in ROWS if row.sender == "server")


def encode(frame: Frame) -> bytes:
    """Any frame to bytes (the ``encode_*`` functions are the fast path)."""
    encoder = _ENCODERS.get(type(frame))
    if encoder is None:
        row = next((row for row in ROWS if isinstance(frame, row.cls)), None)
        if row is None:
            raise LocalProtocolError(f"not a frame: {type(frame).__name__}")
        encoder = row.encode
    return encoder(frame)
