"""The wire codec: every frame round-trips, typed values survive, and bad input only ever raises
RemoteProtocolError (or its subclass FrameTooLarge)."""

from __future__ import annotations

import math
import random
import struct
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minibroker import AckType, ConsumerInfo, Destination, Dispatch, Message, MessageAck, QueueStatistics, wire
from minibroker._core.replay import BrokerInfo, CursorAck, PublishResult, QueuePosition, RangeEntry
from minibroker.errors import FrameTooLarge, LocalProtocolError, RemoteProtocolError
from minibroker.message import ObjectBody
from minibroker.typed import Float, Short
from minibroker.wire import (
    AddConsumer,
    Begin,
    Browse,
    BrowseResult,
    Close,
    Commit,
    Connected,
    ConsumerAdded,
    EncodedMessages,
    Error,
    FrameDecoder,
    FrameType,
    GetQueueStatistics,
    Handshake,
    Hello,
    ListQueues,
    Ok,
    Pull,
    QueueList,
    QueueStatisticsResult,
    RemoveConsumer,
    Rollback,
    Send,
    encode,
    encode_handshake,
)

Q = Destination.queue("orders")
T = Destination.topic("prices")


def message(**kw: Any) -> Message:
    fields: dict[str, Any] = {
        "message_id": "ID:minibroker-1:1:1:7",
        "destination": Q,
        "body": "hello",
        "producer_id": "minibroker-1:1:1",
        "producer_seq": 7,
        "timestamp": 1_767_225_600.125,
        "priority": 4,
    }
    fields.update(kw)
    return Message(**fields)


def full_message() -> Message:
    return message(
        body="żółw ✓ \x00 tail",
        properties={"s": "text", "i": -5, "b": True, "f": False, "x": 2.5, "raw": b"\x00\xff", "none": None},
        priority=9,
        persistent=False,
        expiration=1_767_225_700.5,
        correlation_id="corr-1",
        reply_to=Destination.topic("replies"),
        type="OrderPlaced",
        group_id="g1",
        group_seq=3,
        original_destination=Destination.queue("orders.in"),
    )


def fields(m: Message) -> dict[str, Any]:
    return attrs.asdict(m, recurse=False)


def decode_all(data: bytes, *, sender: wire.Side = "any", handshake: bool = False, **kw: Any) -> list[wire.Frame]:
    decoder = FrameDecoder(sender=sender, handshake=handshake, **kw)
    decoder.receive_data(data)
    frames = decoder.next_frames()
    assert decoder.buffered == 0
    return frames


def roundtrip(frame: wire.Frame) -> wire.Frame:
    [back] = decode_all(encode(frame))
    return back


def same(a: object, b: object) -> bool:
    """Frame equality with messages compared field by field (messages compare by identity)."""
    if isinstance(a, Message) and isinstance(b, Message):
        return fields(a) == fields(b)
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if attrs.has(type(a)) and type(a) is type(b):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    return a == b


STATS = QueueStatistics("orders", 3, 1, 10, 7, 0, 2, 8)

EVERY_FRAME: list[wire.Frame] = [
    Hello(1, None),
    Hello(2, "client-ü"),
    Connected(1, 42, "minibroker"),
    AddConsumer(3, ConsumerInfo(Q, 1000)),
    AddConsumer(4, ConsumerInfo(T, 0, "color = 'red'", -3, True, True, True, 17)),
    ConsumerAdded(3, 9),
    RemoveConsumer(5, 9, 123),
    RemoveConsumer(5, 9, -1),
    Send(6, message()),
    Send(7, full_message(), 12, True),
    Send(8, message(body=b"\x00\x01binary\xff"), None, False),
    Send(9, message(body=("s", 1, None, b"\x00", Short(2), Float(0.5))), None, False),
    Send(10, message(body=ObjectBody.of("hello")), None, False),
    Send(11, message(body=ObjectBody(b"")), None, False),
    Ok(6),
    Error(7, "transaction", "unknown transaction 12"),
    Error(0, "remote-protocol", "bad", True),
    Dispatch(9, message(), 55, 2, True),
    Dispatch(9, None),
    Dispatch(9, full_message(), 1, 0, False),
    MessageAck(9, AckType.STANDARD, "ID:a:1"),
    MessageAck(9, AckType.STANDARD, "ID:a:9", "ID:a:1", 9, 4),
    MessageAck(9, AckType.POISON, "ID:a:9", "ID:a:9", 1, None, "java.lang.Throwable: boom ✗"),
    MessageAck(9, AckType.DELIVERED, "ID:a:3", None, 3, 5, None),
    Pull(9, -1.0),
    Pull(9, 2.5),
    Begin(1),
    Commit(10, 1),
    Rollback(11, 2),
    Browse(12, "orders"),
    BrowseResult(12, (message(), full_message()), True),
    BrowseResult(12, (), False),
    GetQueueStatistics(13, "orders"),
    QueueStatisticsResult(13, STATS),
    QueueStatisticsResult(13, None),
    ListQueues(14),
    QueueList(14, (STATS, QueueStatistics("ActiveMQ.DLQ", 0, 0, 0, 0, 0, 0, 0))),
    QueueList(14, ()),
    Close(15, 77),
    # replayable reads (more in test_cursor_frames.py)
    wire.ReadRange(16, "orders", 3, 10, 5, "epoch-1"),
    wire.RangeResult(16, "epoch-1", 11, (RangeEntry(3, message(), 0), RangeEntry(7, full_message(), 2)), True),
    wire.AckBelow(17, "orders", "spark", 10, None),
    wire.CursorAcked(17, CursorAck("epoch-1", "orders", "spark", 10, 4, 1, 11)),
    wire.GetBrokerInfo(18, ("orders",), "spark"),
    wire.BrokerInfoResult(18, BrokerInfo("epoch-1", "minibroker", (QueuePosition("orders", 3, 11, 8, 3),))),
    wire.Publish(19, (message(), full_message()), True),
    wire.Published(19, PublishResult(1, 1)),
    wire.ReadRange(20, "orders", 0, None, 100, None, True),
    wire.range_columns_of(20, "epoch-1", 9, [RangeEntry(3, message(), 0), RangeEntry(7, full_message(), 2)]),
    # administration and credentials (issue 4)
    wire.Purge(20, "orders"),
    wire.PurgeSelected(20, "orders.>", "JMSMessageID = 'ID:x'"),
    wire.Purged(20, 3),
    Hello(21, "client", "admin", "s3cret ü"),
    Hello(22, None, None, "only-a-password"),
    # temporary destinations and selective browsing (issue 18)
    wire.CreateTemporary(23, "temp-queue://ID:c-1:1"),
    wire.TemporaryCreated(23, "temp-queue://ID:c-1:1:1"),
    wire.DeleteTemporary(24, "temp-topic://ID:c-1:1:2"),
    wire.BrowseSelected(25, "orders", "color = 'rød'"),
    wire.Unsubscribe(26, "sub-ü"),
    wire.AddProducer(3, "topic://prices.ü"),
    wire.AddProducer(4, ""),
    wire.RemoveProducer(3, ""),
    wire.KeepAlive(),
    wire.ListQueues(4, "orders"),
    wire.ListTopics(28),
    wire.TopicList(28, '{"topics": [["prices", 3, 6, 2]], "durables": []}'),
    AddConsumer(27, ConsumerInfo(T, 100, "a > 1", 0, False, False, True, 3, "durable-1")),
]


class TestRoundTrip:
    @pytest.mark.parametrize("frame", EVERY_FRAME, ids=lambda f: type(f).__name__)
    def test_every_frame(self, frame: wire.Frame) -> None:
        back = roundtrip(frame)
        assert type(back) is type(frame)
        assert same(back, frame), (back, frame)

    def test_every_frame_type_is_covered(self) -> None:
        seen = {encode(f)[4] for f in EVERY_FRAME} | {FrameType.HANDSHAKE}
        assert seen == set(FrameType)

    def test_handshake(self) -> None:
        data = encode_handshake()
        assert data[5:9] == wire.MAGIC
        decoder = FrameDecoder()
        decoder.receive_data(data + encode(Ok(1)))
        assert decoder.next_frames() == [Handshake(wire.PROTOCOL_VERSION), Ok(1)]

    def test_typed_properties_keep_their_types(self) -> None:
        props = {
            "str": "v",
            "empty": "",
            "int": 1,
            "neg": -1,
            "zero": 0,
            "min64": -(2**63),
            "max64": 2**63 - 1,
            "big": 2**64 + 5,
            "negbig": -(2**100),
            "float": 1.0,
            "inf": math.inf,
            "true": True,
            "false": False,
            "bytes": b"",
            "more": b"\x00\x80",
            "none": None,
            "ünï": "✓",
        }
        [frame] = decode_all(encode(Send(1, message(properties=props))))
        assert isinstance(frame, Send)
        back = frame.message.properties
        assert back == props
        assert [type(v) for v in back.values()] == [type(v) for v in props.values()]
        nan = decode_all(encode(Send(1, message(properties={"nan": math.nan}))))[0]
        assert isinstance(nan, Send) and math.isnan(nan.message.properties["nan"])  # type: ignore[arg-type]

    def test_java_typed_values_and_map_bodies_keep_their_types(self) -> None:
        from minibroker.typed import Byte, Float, Long, Short

        props = {"b": Byte(-3), "s": Short(300), "l": Long(7), "f": Float(0.1), "plain": 7}
        body = {"k": Short(1), "raw": b"\x00", "text": "t", "none": None, "flag": False, "x": Float(2.5)}
        [frame] = decode_all(encode(Send(1, message(properties=props, body=body))))
        assert isinstance(frame, Send)
        assert frame.message.properties == props and frame.message.body == body
        assert [type(v) for v in frame.message.properties.values()] == [Byte, Short, Long, Float, int]
        back = frame.message.body
        assert not isinstance(back, (str, bytes)) and [type(v) for v in back.values()] == [
            Short,
            bytes,
            str,
            type(None),
            bool,
            Float,
        ]
        with pytest.raises(TypeError):
            back["k"] = 2  # type: ignore[index]  # a received map is read-only

    def test_bodies_travel_raw(self) -> None:
        text = "é" * 1000
        data = encode(Send(1, message(body=text)))
        assert text.encode() in data and b"base64" not in data
        blob = bytes(range(256)) * 4
        data = encode(Send(1, message(body=blob)))
        assert blob in data
        for body in ("", b"", text, blob, "\x00"):
            [frame] = decode_all(encode(Send(1, message(body=body))))
            assert isinstance(frame, Send)
            assert frame.message.body == body and type(frame.message.body) is type(body)

    def test_encoded_messages_reused_for_dispatch(self) -> None:
        cache = EncodedMessages()
        original = full_message()
        [sent] = decode_all(encode(Send(1, original)), encoded=cache)
        assert isinstance(sent, Send) and len(cache) == 1
        dispatch = Dispatch(3, sent.message, 8, 1, True)
        assert wire.encode_dispatch(dispatch, cache) == wire.encode_dispatch(dispatch)
        [back] = decode_all(wire.encode_dispatch(dispatch, cache))
        assert same(back, Dispatch(3, original, 8, 1, True))

    def test_encoded_messages_bounded_by_count_and_bytes(self) -> None:
        sent = [message(message_id=f"ID:x:{i}", body="b" * 100) for i in range(10)]
        by_count = EncodedMessages(limit=4)
        by_bytes = EncodedMessages(max_bytes=250)
        for m in sent:
            by_count.put(m, b"r" * 100)
            by_bytes.put(m, b"r" * 100)
        assert len(by_count) == 4 and by_count.get(sent[5]) is None and by_count.get(sent[9]) == b"r" * 100
        assert len(by_bytes) == 2 and by_bytes.bytes == 200 and by_bytes.get(sent[7]) is None
        by_bytes.put(sent[9], b"s" * 50)  # the same message again: replaced, not counted twice
        assert by_bytes.bytes == 150 and by_bytes.get(sent[9]) == b"s" * 50
        by_bytes.clear()
        assert len(by_bytes) == 0 and by_bytes.bytes == 0

    def test_browse_results_are_split_to_fit(self) -> None:
        messages = [message(message_id=f"ID:x:{i}", body="b" * 500) for i in range(50)]
        frames = wire.encode_browse_results(4, messages, 4096)
        assert len(frames) > 1 and all(len(f) <= 4096 + 4 for f in frames)
        decoded = [f for data in frames for f in decode_all(data)]
        assert [f.last for f in decoded if isinstance(f, BrowseResult)] == [False] * (len(frames) - 1) + [True]
        got = [m for f in decoded if isinstance(f, BrowseResult) for m in f.messages]
        assert same(got, messages)

    def test_many_frames_fed_byte_by_byte(self) -> None:
        stream = encode_handshake() + b"".join(encode(f) for f in EVERY_FRAME)
        decoder = FrameDecoder()
        got: list[wire.Frame] = []
        for i in range(len(stream)):
            decoder.receive_data(stream[i : i + 1])
            got.extend(decoder)
        assert isinstance(got[0], Handshake)
        assert same(got[1:], EVERY_FRAME)

    def test_chunks_of_every_size(self) -> None:
        stream = b"".join(encode(f) for f in EVERY_FRAME)
        for size in (2, 3, 7, 64, 1000):
            decoder = FrameDecoder(handshake=False)
            got: list[wire.Frame] = []
            for i in range(0, len(stream), size):
                decoder.receive_data(stream[i : i + size])
                got.extend(decoder.next_frames())
            assert same(got, EVERY_FRAME)

    def test_direction_filter(self) -> None:
        assert decode_all(encode(Hello(1)), sender="client") == [Hello(1)]
        with pytest.raises(RemoteProtocolError, match="only sent by the server"):
            decode_all(encode(Dispatch(1, None)), sender="client")
        with pytest.raises(RemoteProtocolError, match="only sent by the client"):
            decode_all(encode(Begin(1)), sender="server")


@st.composite
def property_values(draw: st.DrawFn) -> Any:
    return draw(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(allow_nan=False),
            st.text(),
            st.binary(),
        )
    )


@given(
    props=st.dictionaries(st.text(max_size=8), property_values(), max_size=6),
    body=st.one_of(st.text(), st.binary()),
    seq=st.integers(-(2**63), 2**63 - 1),
    counter=st.integers(0, 2**31),
)
@settings(max_examples=200, deadline=None)
def test_dispatch_round_trip_property(props: dict[str, Any], body: str | bytes, seq: int, counter: int) -> None:
    m = message(body=body, properties=props)
    [back] = decode_all(encode(Dispatch(5, m, seq, counter, False)))
    assert isinstance(back, Dispatch) and back.message is not None
    assert fields(back.message) == fields(m)
    assert [type(v) for v in back.message.properties.values()] == [type(v) for v in props.values()]
    assert (back.seq, back.redelivery_counter) == (seq, counter)


class TestMalformed:
    def test_oversize_is_refused_before_the_body(self) -> None:
        decoder = FrameDecoder(handshake=False, max_frame_size=1024)
        decoder.receive_data(struct.pack(">IB", 5000, FrameType.SEND))
        with pytest.raises(FrameTooLarge) as info:
            decoder.next_frame()
        assert (info.value.size, info.value.maximum) == (5000, 1024)  # type: ignore[attr-defined]
        assert isinstance(info.value, RemoteProtocolError)

    def test_a_failed_decoder_stays_failed(self) -> None:
        decoder = FrameDecoder(handshake=False)
        decoder.receive_data(b"\x00\x00\x00\x01\x7f")
        with pytest.raises(RemoteProtocolError, match="unknown frame type 0x7f"):
            decoder.next_frame()
        decoder.receive_data(encode(Ok(1)))
        with pytest.raises(RemoteProtocolError, match="already failed"):
            decoder.next_frame()

    def test_bad_magic(self) -> None:
        decoder = FrameDecoder()
        decoder.receive_data(b"GET / HTTP/1.1\r\n")
        with pytest.raises(RemoteProtocolError, match="not a minibroker peer"):
            decoder.next_frame()

    def test_bad_magic_is_seen_on_the_first_byte(self) -> None:
        decoder = FrameDecoder()
        decoder.receive_data(b"\x01")
        with pytest.raises(RemoteProtocolError):
            decoder.next_frame()

    def test_version_mismatch(self) -> None:
        decoder = FrameDecoder()
        decoder.receive_data(encode_handshake(99))
        with pytest.raises(RemoteProtocolError, match="version mismatch: the peer speaks version 99"):
            decoder.next_frame()

    def test_second_handshake(self) -> None:
        decoder = FrameDecoder()
        decoder.receive_data(encode_handshake() + encode_handshake())
        assert isinstance(decoder.next_frame(), Handshake)
        with pytest.raises(RemoteProtocolError, match="second HANDSHAKE"):
            decoder.next_frame()

    def test_empty_frame(self) -> None:
        with pytest.raises(RemoteProtocolError, match="empty frame"):
            decode_all(b"\x00\x00\x00\x00")

    def test_truncated_string(self) -> None:
        # a BROWSE whose queue name announces 50 bytes but carries 3
        data = struct.pack(">IBII", 1 + 4 + 4 + 3, FrameType.BROWSE, 1, 50) + b"abc"
        with pytest.raises(RemoteProtocolError, match="malformed BROWSE frame: queue name is truncated"):
            decode_all(data)

    def test_truncated_fixed_field(self) -> None:
        data = encode(Commit(1, 2))
        cut = struct.pack(">I", len(data) - 4 - 3) + data[4:-3]
        with pytest.raises(RemoteProtocolError, match="malformed COMMIT frame: a field is truncated"):
            decode_all(cut)

    def test_truncated_message(self) -> None:
        data = encode(Send(1, message(body="x" * 100)))
        cut = struct.pack(">I", len(data) - 4 - 50) + data[4:-50]
        with pytest.raises(RemoteProtocolError, match="malformed SEND frame: message is truncated"):
            decode_all(cut)

    def test_a_truncated_field_never_reads_into_the_next_frame(self) -> None:
        data = encode(Commit(1, 2))
        cut = struct.pack(">I", len(data) - 4 - 3) + data[4:-3]
        with pytest.raises(RemoteProtocolError):
            decode_all(cut + encode(Ok(1)) * 3)

    def test_trailing_bytes(self) -> None:
        data = encode(Ok(1))
        padded = struct.pack(">I", len(data) - 4 + 2) + data[4:] + b"\x00\x00"
        with pytest.raises(RemoteProtocolError, match="2 unexpected bytes after the last field"):
            decode_all(padded)

    def test_bad_utf8(self) -> None:
        good = encode(Send(1, message(message_id="ID:abc")))
        bad = good.replace(b"ID:abc", b"ID:\xff\xfe\xfd")
        with pytest.raises(RemoteProtocolError, match="malformed SEND frame: a string is not valid UTF-8"):
            decode_all(bad)

    def test_bad_utf8_in_a_text_body(self) -> None:
        good = encode(Send(1, message(body="abcdef")))
        bad = good.replace(b"abcdef", b"abc\xc3\x28f")
        with pytest.raises(RemoteProtocolError, match="not valid UTF-8"):
            decode_all(bad)

    def test_unknown_ack_type(self) -> None:
        data = bytearray(encode(MessageAck(1, AckType.STANDARD, "ID:1")))
        data[4 + 1 + 8] = 42
        with pytest.raises(RemoteProtocolError, match="malformed ACK frame: unknown ack type 42"):
            decode_all(bytes(data))

    def test_priority_out_of_range(self) -> None:
        data = bytearray(encode(Send(1, message())))
        data[4 + 1 + 13 + 1] = 10  # the message's priority byte
        with pytest.raises(RemoteProtocolError, match=r"priority must be 0\.\.9, not 10"):
            decode_all(bytes(data))

    def test_bad_boolean(self) -> None:
        data = bytearray(encode(Error(1, "x", "y")))
        data[4 + 1 + 4] = 2
        with pytest.raises(RemoteProtocolError, match="fatal flag must be 0 or 1, not 2"):
            decode_all(bytes(data))

    def test_bad_destination(self) -> None:
        good = encode(Browse(1, "x"))
        assert good  # destinations are checked where they travel: in messages and consumer infos
        data = bytearray(encode(AddConsumer(1, ConsumerInfo(Q))))
        data[4 + 1 + 4 + 4 + 4 + 8 + 1] = 7  # the destination kind
        with pytest.raises(RemoteProtocolError, match=r"destination kind must be 0 \(queue\) or 1 \(topic\), not 7"):
            decode_all(bytes(data))
        bad_name = encode(AddConsumer(1, ConsumerInfo(Destination.queue("abc")))).replace(b"abc", b" ab")
        with pytest.raises(RemoteProtocolError, match="invalid destination name"):
            decode_all(bad_name)

    def test_unknown_property_tag(self) -> None:
        data = encode(Send(1, message(properties={"k": None})))
        assert data.endswith(b"k\x00")
        with pytest.raises(RemoteProtocolError, match="property 'k' has an unknown type tag 99"):
            decode_all(data[:-1] + b"\x63")

    def test_duplicate_property(self) -> None:
        data = encode(Send(1, message(properties={"a": None, "b": None})))
        twice = data.replace(b"\x00\x00\x00\x01b\x00", b"\x00\x00\x00\x01a\x00")
        with pytest.raises(RemoteProtocolError, match="property 'a' appears twice"):
            decode_all(twice)

    def test_huge_counts_are_refused_without_allocating(self) -> None:
        data = struct.pack(">IBIBI", 1 + 4 + 1 + 4, FrameType.BROWSE_RESULT, 1, 1, 2**32 - 1)
        with pytest.raises(RemoteProtocolError, match="messages announced"):
            decode_all(data)

    def test_eof_inside_a_frame(self) -> None:
        decoder = FrameDecoder(handshake=False)
        decoder.receive_data(encode(Ok(1))[:-1])
        assert decoder.next_frame() is None
        decoder.receive_data(b"")
        with pytest.raises(RemoteProtocolError, match="ended inside a frame"):
            decoder.next_frame()

    def test_clean_eof(self) -> None:
        decoder = FrameDecoder(handshake=False)
        decoder.receive_data(encode(Ok(1)))
        decoder.receive_data(b"")
        assert decoder.next_frames() == [Ok(1)]


class TestEncodeRefusals:
    @pytest.mark.parametrize("props", [{"k": object()}, {"k": [1]}, {"k": {"a": 1}}, {1: "v"}])
    def test_unsupported_property_values(self, props: dict[Any, Any]) -> None:
        with pytest.raises(LocalProtocolError, match="cannot encode"):
            encode(Send(1, message(properties=props)))

    def test_lone_surrogate_is_written_as_java_writes_it(self) -> None:
        """Not a refusal: "?" in its place, as Java's String.getBytes(UTF_8) (issue 41)."""
        sent = message(body="a\ud800", properties={"k\udc00": "v\ud800"}, correlation_id="c\ud800")
        frame = roundtrip(Send(1, sent))
        assert isinstance(frame, Send)
        got = frame.message
        assert (got.body, dict(got.properties), got.correlation_id) == ("a?", {"k?": "v?"}, "c?")

    def test_out_of_range_numbers(self) -> None:
        with pytest.raises(LocalProtocolError):
            encode(Send(1, message(priority=10)))
        with pytest.raises(LocalProtocolError):
            encode(Ok(2**32))
        with pytest.raises(LocalProtocolError):
            encode(Dispatch(2**63, None))

    def test_bad_body(self) -> None:
        with pytest.raises(LocalProtocolError, match="a body is str, bytes, a map, a tuple or an ObjectBody"):
            encode(Send(1, message(body=12)))

    def test_not_a_frame(self) -> None:
        with pytest.raises(LocalProtocolError, match="not a frame"):
            encode("hello")  # type: ignore[arg-type]


def _mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(7)
        if choice == 0 and buf:  # flip a byte
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif choice == 1 and buf:  # truncate
            del buf[rng.randrange(len(buf)) :]
        elif choice == 2:  # insert garbage
            pos = rng.randrange(len(buf) + 1)
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif choice == 3 and len(buf) >= 4:  # rewrite the frame length
            buf[0:4] = struct.pack(">I", rng.choice([0, 1, 2, len(buf) - 4, len(buf), rng.randrange(2**32)]))
        elif choice == 4 and len(buf) > 5:  # rewrite a u32 field somewhere (string lengths, counts)
            pos = rng.randrange(5, len(buf))
            buf[pos : pos + 4] = struct.pack(">I", rng.choice([0, 1, 0xFFFFFFFF, rng.randrange(2**32)]))
        elif choice == 5 and len(buf) > 4:  # another frame type
            buf[4] = rng.randrange(256)
        elif choice == 6 and buf:  # delete a slice
            a = rng.randrange(len(buf))
            del buf[a : a + rng.randint(1, 6)]
    return bytes(buf)


def test_fuzz_only_protocol_errors() -> None:
    """10,000 mutated and random inputs: the decoder yields frames or raises RemoteProtocolError, nothing else."""
    rng = random.Random(20260101)
    seeds = [encode(f) for f in EVERY_FRAME]
    outcomes = {"frames": 0, "errors": 0}
    for i in range(10_000):
        if i % 10 == 0:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
        else:
            data = b"".join(_mutate(rng, rng.choice(seeds)) for _ in range(rng.randint(1, 3)))
        handshake = i % 7 == 0
        if handshake and rng.random() < 0.7:
            data = encode_handshake() + data
        decoder = FrameDecoder(
            sender=rng.choice(["client", "server", "any"]),
            handshake=handshake,
            max_frame_size=rng.choice([64, 4096, wire.DEFAULT_MAX_FRAME_SIZE]),
        )
        try:
            step = rng.choice([len(data) or 1, 1, 3, 17])
            for start in range(0, len(data), step):
                decoder.receive_data(data[start : start + step])
                for _frame in decoder:
                    outcomes["frames"] += 1
            decoder.receive_data(b"")
            outcomes["frames"] += len(decoder.next_frames())
        except RemoteProtocolError:  # FrameTooLarge included
            outcomes["errors"] += 1
    assert outcomes["errors"] > 1000 and outcomes["frames"] > 100, outcomes
