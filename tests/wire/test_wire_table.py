"""The table of frame types (minibroker.wire.table) is complete and consistent: every frame class has exactly one
row, type codes are unique, each side's frame sets come from the rows, and each row's encoder and parser are
inverses of each other on a sample frame of its type."""

from __future__ import annotations

import typing
from typing import Any

import attrs
import pytest

from minibroker import AckType, ConsumerInfo, Destination, Dispatch, Message, MessageAck, QueueStatistics, wire
from minibroker._core.replay import BrokerInfo, CursorAck, PublishResult, QueuePosition, RangeEntry
from minibroker.errors import RemoteProtocolError
from minibroker.wire import ROWS, FrameDecoder, FrameType, Row

Q = Destination.queue("orders")
MESSAGE = Message(
    "ID:t-1:1:1:1", Q, "hello", {"n": 1, "s": "x"}, producer_id="t-1:1:1", producer_seq=1, timestamp=1_767_225_600.5
)
STATS = QueueStatistics("orders", 3, 1, 10, 7, 0, 2, 8)

#: one frame of every type, keyed by class; most of its fields away from their defaults
SAMPLES: dict[type[Any], wire.Frame] = {
    frame.__class__: frame
    for frame in (
        wire.Handshake(),
        wire.Hello(1, "client", "user", "password"),
        wire.AddConsumer(2, ConsumerInfo(Q, 10, "n > 0", 3, True, False, True, 4)),
        wire.RemoveConsumer(3, 7, 12),
        wire.Send(4, MESSAGE, 5, True),
        MessageAck(7, AckType.STANDARD, "ID:t-1:1:1:9", "ID:t-1:1:1:1", 9, 5),
        wire.Pull(7, 0.5),
        wire.Begin(5),
        wire.Commit(6, 5),
        wire.Rollback(7, 5),
        wire.Browse(8, "orders"),
        wire.GetQueueStatistics(9, "orders"),
        wire.ListQueues(10),
        wire.Close(11, 40),
        wire.Purge(12, "orders"),
        wire.Connected(1, 99, "minibroker"),
        wire.ConsumerAdded(2, 7),
        wire.Ok(4),
        wire.Error(6, "transaction", "unknown transaction 5", True),
        Dispatch(7, MESSAGE, 40, 1, True),
        wire.BrowseResult(8, (MESSAGE,), False),
        wire.QueueStatisticsResult(9, STATS),
        wire.QueueList(10, (STATS,)),
        wire.Purged(12, 3),
        wire.ReadRange(13, "orders", 1, 9, 5, "epoch", False),
        wire.AckBelow(14, "orders", "spark", 9, "epoch"),
        wire.GetBrokerInfo(15, ("orders",), "spark"),
        wire.Publish(16, (MESSAGE,), True),
        wire.RangeResult(13, "epoch", 10, (RangeEntry(3, MESSAGE, 1),), False),
        wire.CursorAcked(14, CursorAck("epoch", "orders", "spark", 9, 4, 1, 10)),
        wire.BrokerInfoResult(15, BrokerInfo("epoch", "minibroker", (QueuePosition("orders", 3, 10, 7, 9),))),
        wire.Published(16, PublishResult(1, 0)),
        wire.range_columns_of(13, "epoch", 10, [RangeEntry(3, MESSAGE, 1)], last=False),
        wire.CreateTemporary(17, "temp-queue://ID:c-1:1"),
        wire.TemporaryCreated(17, "temp-queue://ID:c-1:1:1"),
        wire.DeleteTemporary(18, "temp-queue://ID:c-1:1:1"),
        wire.BrowseSelected(19, "orders", "n > 0"),
        wire.PurgeSelected(19, "orders.>", "n > 0"),
        wire.Unsubscribe(20, "sub-1"),
        wire.AddProducer(1, "queue://orders"),
        wire.RemoveProducer(1, ""),
        wire.KeepAlive(),
        wire.ListTopics(21),
        wire.TopicList(21, '{"topics": [], "durables": []}'),
    )
}


def same(a: object, b: object) -> bool:
    """Frame equality with messages compared field by field (messages compare by identity)."""
    if isinstance(a, Message) and isinstance(b, Message):
        return attrs.asdict(a, recurse=False) == attrs.asdict(b, recurse=False)
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if attrs.has(type(a)) and type(a) is type(b):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    return a == b


def test_every_frame_class_has_exactly_one_row() -> None:
    classes = [row.cls for row in ROWS]
    assert len(classes) == len(set(classes))
    assert set(classes) == set(typing.get_args(wire.Frame))


def test_type_codes_are_unique_and_every_code_has_a_row() -> None:
    codes = [row.code for row in ROWS]
    assert len(codes) == len(set(codes))
    assert set(codes) == set(FrameType)


def test_each_rows_sender_agrees_with_its_code_range() -> None:
    """Codes 0x02-0x1F and 0x40-0x4F are the client's, 0x20-0x3F and 0x50-0x5F the server's."""
    for row in ROWS:
        client_range = 0x02 <= row.code < 0x20 or 0x40 <= row.code < 0x50
        server_range = 0x20 <= row.code < 0x40 or 0x50 <= row.code < 0x60
        expected = "client" if client_range else "server" if server_range else "both"
        assert row.sender == expected, row
    assert len(wire.CLIENT_FRAMES) + len(wire.SERVER_FRAMES) == len(ROWS) - 1
    assert [row.code for row in ROWS if row.parse is None] == [FrameType.HANDSHAKE]


def test_every_row_has_a_sample() -> None:
    assert set(SAMPLES) == {row.cls for row in ROWS}


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.code.name)
class TestRow:
    def test_encode_then_parse_round_trips(self, row: Row) -> None:
        sample = SAMPLES[row.cls]
        data = row.encode(sample)
        assert data[4] == row.code
        assert data == wire.encode(sample)
        if row.parse is None:  # the handshake opens a stream: the decoder reads it itself
            decoder = FrameDecoder()
        else:
            decoder = FrameDecoder(sender=row.sender if row.sender != "both" else "any", handshake=False)
        decoder.receive_data(data)
        [back] = decoder.next_frames()
        assert type(back) is row.cls
        assert same(back, sample)
        assert decoder.buffered == 0


@pytest.mark.parametrize("row", [row for row in ROWS if row.sender != "both"], ids=lambda row: row.code.name)
def test_the_other_side_refuses_it(row: Row) -> None:
    other = "server" if row.sender == "client" else "client"
    decoder = FrameDecoder(sender=other, handshake=False)
    decoder.receive_data(row.encode(SAMPLES[row.cls]))
    with pytest.raises(RemoteProtocolError, match=f"only sent by the {row.sender}"):
        decoder.next_frame()
