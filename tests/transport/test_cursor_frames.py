"""The replayable-read frames (READ_RANGE, ACK_BELOW, GET_BROKER_INFO, PUBLISH and their answers): the codec on its
own, then the client API end to end, in-process (MemoryLink) and over TCP, which must agree."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator

import attrs
import pytest

from minibroker import Broker, Destination, Message, RealClock, wire
from minibroker._core.replay import BrokerInfo, CursorAck, PublishResult, QueuePosition, RangeEntry
from minibroker.client import AckMode, Connection, connect
from minibroker.errors import ConnectionClosed, InvalidAcknowledge, LocalProtocolError, RemoteProtocolError, StaleEpoch
from minibroker.plugins.server.tcp import start_server
from minibroker.wire import FrameDecoder, FrameType, encode

Q = Destination.queue("orders")
TIMEOUT = 5.0


def msg(i: int, dest: Destination = Q, **kw: object) -> Message:
    return Message(f"ID:t:{i}", dest, f"body-{i}", properties={"n": i}, timestamp=1_767_225_600.5, **kw)  # type: ignore[arg-type]


def decode(data: bytes, sender: wire.Side = "any") -> list[wire.Frame]:
    decoder = FrameDecoder(sender=sender, handshake=False)
    decoder.receive_data(data)
    return decoder.next_frames()


class TestCodec:
    @pytest.mark.parametrize(
        "frame",
        [
            wire.ReadRange(1, "orders"),
            wire.ReadRange(2, "q.ü", 0, 0, 0, ""),
            wire.AckBelow(3, "orders", "c", 0, "e"),
            wire.GetBrokerInfo(4),
            wire.GetBrokerInfo(5, (), None),
            wire.BrokerInfoResult(6, BrokerInfo("e", "", ())),
            wire.BrokerInfoResult(6, BrokerInfo("e", "b", (QueuePosition("a", 0, 0, 0, None),))),
            wire.RangeResult(7, "e", 0, (), False),
            wire.Publish(8, (), False),
            wire.Published(9, PublishResult(0, 0)),
            wire.CursorAcked(10, CursorAck("e", "q", "c", 0, 0, 0, 0)),
        ],
        ids=lambda f: type(f).__name__,
    )
    def test_edge_values_round_trip(self, frame: wire.Frame) -> None:
        [back] = decode(encode(frame))
        assert back == frame or (type(back) is type(frame) and attrs.asdict(back) == attrs.asdict(frame))  # type: ignore[arg-type]

    def test_direction(self) -> None:
        request = wire.encode_read_range(1, "orders")
        answer = wire.encode_published(1, PublishResult(1, 0))
        assert isinstance(decode(request, "client")[0], wire.ReadRange)
        with pytest.raises(RemoteProtocolError, match="only sent by the client"):
            decode(request, "server")
        with pytest.raises(RemoteProtocolError, match="only sent by the server"):
            decode(answer, "client")

    def test_range_results_are_split_to_fit(self) -> None:
        entries = [RangeEntry(i, msg(i), i % 2) for i in range(50)]
        frames = wire.encode_range_results(3, "epoch", 50, entries, max_frame_size=1024)
        assert len(frames) > 3 and all(len(f) <= 1024 + 4 for f in frames)
        parts = [decode(f)[0] for f in frames]
        assert all(isinstance(p, wire.RangeResult) for p in parts)
        assert [p.last for p in parts] == [False] * (len(parts) - 1) + [True]  # type: ignore[union-attr]
        got = [e for p in parts for e in p.entries]  # type: ignore[union-attr]
        assert [(e.seq, e.message.message_id, e.redelivery_counter) for e in got] == [
            (e.seq, e.message.message_id, e.redelivery_counter) for e in entries
        ]
        assert got[7].message.properties == {"n": 7}

    def test_empty_range_result_is_one_last_frame(self) -> None:
        [frame] = wire.encode_range_results(3, "epoch", 9, [], max_frame_size=1024)
        assert decode(frame) == [wire.RangeResult(3, "epoch", 9, (), True)]

    def test_a_message_too_large_for_a_frame(self) -> None:
        big = RangeEntry(0, Message("x", Q, "y" * 2000), 0)
        with pytest.raises(LocalProtocolError, match="does not fit"):
            wire.encode_range_results(1, "e", 1, [big], max_frame_size=1024)

    def test_negative_bounds_are_refused(self) -> None:
        with pytest.raises(LocalProtocolError):
            wire.encode_read_range(1, "q", -1)
        raw = (
            struct.pack(">IBIqqq", 1 + 4 + 24 + 4 + 1 + 4, FrameType.READ_RANGE, 1, 0, -5, -1)
            + struct.pack(">I", 1)
            + b"q"
            + struct.pack(">I", 0xFFFFFFFF)
        )
        with pytest.raises(RemoteProtocolError, match="negative"):
            decode(raw)

    def test_huge_counts_are_refused_without_allocating(self) -> None:
        raw = struct.pack(">IBIBI", 1 + 4 + 1 + 4, FrameType.PUBLISH, 1, 0, 2**32 - 1)
        with pytest.raises(RemoteProtocolError, match="announced"):
            decode(raw)
        raw = struct.pack(">IBIBqI", 1 + 4 + 1 + 8 + 4 + 4, FrameType.RANGE_RESULT, 1, 1, 0, 2**31) + struct.pack(
            ">I", 0
        )
        with pytest.raises(RemoteProtocolError, match="announced"):
            decode(raw)

    def test_unknown_flags(self) -> None:
        raw = struct.pack(">IBIBI", 1 + 4 + 1 + 4, FrameType.PUBLISH, 1, 2, 0)
        with pytest.raises(RemoteProtocolError, match="flags"):
            decode(raw)


class TestColumns:
    def entries(self) -> list[RangeEntry]:
        return [
            RangeEntry(5, msg(5), 0),
            RangeEntry(
                6,
                Message(
                    "ID:b",
                    Q,
                    b"\x00\xffraw",
                    {"flag": True, "none": None, "raw": b"\x01"},
                    priority=9,
                    persistent=False,
                    timestamp=2.5,
                    correlation_id="c",
                    reply_to=Destination.topic("t"),
                    group_id="g",
                    group_seq=3,
                ),
                2,
            ),
            RangeEntry(9, Message("ID:c-ü", Q, "", timestamp=0.0), 1),
        ]

    def test_buffers(self) -> None:
        import array

        cols = wire.range_columns_of(1, "e", 10, self.entries())
        assert cols.count == 3 and cols.property_count == 1 + 7
        assert list(array.array("q", cols.seq)) == [5, 6, 9]
        assert list(array.array("i", cols.redelivery_counter)) == [0, 2, 1]
        assert list(array.array("i", cols.priority)) == [4, 9, 4]
        assert list(array.array("q", cols.timestamp)) == [1_767_225_600_500_000, 2_500_000, 0]
        assert cols.flags == bytes([3, 0, 3])
        ids = array.array("i", cols.id_offsets)
        assert [cols.id_data[ids[i] : ids[i + 1]].decode() for i in range(3)] == ["ID:t:5", "ID:b", "ID:c-ü"]
        bodies = array.array("i", cols.body_offsets)
        assert [cols.body_data[bodies[i] : bodies[i + 1]] for i in range(3)] == [b"body-5", b"\x00\xffraw", b""]
        props = array.array("i", cols.prop_offsets)
        keys, values = array.array("i", cols.key_offsets), array.array("i", cols.value_offsets)
        pairs = [
            (
                cols.key_data[keys[j] : keys[j + 1]].decode(),
                None if cols.value_nulls[j] else cols.value_data[values[j] : values[j + 1]].decode(),
            )
            for j in range(props[1], props[2])
        ]
        assert pairs == [
            ("flag", "true"),
            ("none", None),
            ("raw", "AQ=="),
            ("JMSCorrelationID", "c"),
            ("JMSReplyTo", "topic://t"),
            ("JMSXGroupID", "g"),
            ("JMSXGroupSeq", "3"),
        ]
        assert (props[0], props[1], props[3]) == (0, 1, 8)

    def test_split_to_fit_and_too_large(self) -> None:
        entries = [RangeEntry(i, msg(i), 0) for i in range(40)]
        seqs, messages, counters = zip(*entries, strict=True)
        frames = wire.encode_range_columns_results(1, "e", 40, seqs, messages, counters, max_frame_size=1024)
        parts = [decode(f)[0] for f in frames]
        assert len(parts) > 2 and all(len(f) <= 1028 for f in frames)
        assert [p.last for p in parts] == [False] * (len(parts) - 1) + [True]  # type: ignore[union-attr]
        assert sum(p.count for p in parts) == 40  # type: ignore[union-attr]
        with pytest.raises(LocalProtocolError, match="does not fit"):
            wire.encode_range_columns_results(1, "e", 1, [0], [Message("x", Q, "y" * 5000)], [0], 1024)

    def test_inconsistent_buffers_are_refused(self) -> None:
        cols = wire.range_columns_of(1, "e", 10, self.entries())
        for bad in (
            attrs.evolve(cols, seq=cols.seq[:-1]),
            attrs.evolve(cols, id_data=cols.id_data + b"x"),
            attrs.evolve(cols, prop_offsets=cols.prop_offsets[:-4] + struct.pack("<i", 99)),
            attrs.evolve(cols, value_nulls=b""),
            attrs.evolve(cols, key_offsets=b"\x00\x00"),
        ):
            with pytest.raises(RemoteProtocolError, match="column"):
                decode(encode(bad))


# -- end to end: the same checks on both transports -----------------------------------------------------------------


@pytest.fixture
async def broker() -> AsyncIterator[Broker]:
    b = Broker(clock=RealClock())
    epochs = iter(["epoch-1", "epoch-2", "epoch-3"])
    b.epoch_source = lambda: next(epochs)
    async with b:
        yield b


@pytest.fixture(params=["memory", "tcp"])
async def conn(request: pytest.FixtureRequest, broker: Broker) -> AsyncIterator[Connection]:
    if request.param == "memory":
        c = await connect(broker)
        try:
            yield c
        finally:
            await c.close()
        return
    server = await start_server(broker, port=0)
    try:
        c = await connect(server.url)
        try:
            yield c
        finally:
            await c.close()
    finally:
        await asyncio.wait_for(server.close(), TIMEOUT)


async def fill(conn: Connection, n: int, queue: str = "orders") -> None:
    session = await conn.create_session()
    producer = await session.create_producer(queue)
    for i in range(n):
        await producer.send(f"body-{i}", properties={"n": i}, priority=i % 10)


class TestClientApi:
    async def test_broker_info(self, conn: Connection, broker: Broker) -> None:
        await fill(conn, 3)
        await fill(conn, 1, "audit")
        info = await conn.broker_info()
        assert (info.epoch, info.name) == ("epoch-1", "minibroker") and broker.epoch == "epoch-1"
        assert [(p.queue, p.first_seq, p.next_seq, p.size, p.cursor_floor) for p in info.queues] == [
            ("audit", 0, 1, 1, None),
            ("orders", 0, 3, 3, None),
        ]
        one = await conn.broker_info(["orders", "missing"], cursor="spark")
        assert [(p.queue, p.next_seq, p.cursor_floor) for p in one.queues] == [
            ("orders", 3, None),
            ("missing", 0, None),
        ]
        assert one.position("orders") is not None and one.position("nope") is None

    async def test_read_range_is_a_replayable_browse(self, conn: Connection, broker: Broker) -> None:
        await fill(conn, 10)
        read = await conn.read_range("orders", 2, 6)
        assert (read.epoch, read.queue, read.next_seq, len(read)) == ("epoch-1", "orders", 10, 4)
        assert [
            (e.seq, e.message.body, e.message.properties, e.message.priority, e.redelivery_counter) for e in read
        ] == [(i, f"body-{i}", {"n": i}, i % 10, 0) for i in range(2, 6)]
        again = await conn.read_range("orders", 2, 6)
        assert [e.message.message_id for e in again] == [e.message.message_id for e in read]
        assert broker.queue("orders").size == 10 and broker.queue("orders").dequeued == 0
        assert [e.seq for e in await conn.read_range("orders", 0, None, 3)] == [0, 1, 2]
        assert len(await conn.read_range("missing")) == 0

    async def test_received_messages_carry_the_same_seq(self, conn: Connection) -> None:
        await fill(conn, 3)
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        consumer = await session.create_consumer("orders")
        got = [await consumer.receive(TIMEOUT) for _ in range(3)]
        assert [m.seq for m in got if m is not None] == [e.seq for e in await conn.read_range("orders")]

    async def test_ack_below(self, conn: Connection, broker: Broker) -> None:
        await fill(conn, 10)
        result = await conn.ack_below("orders", "spark", 4, epoch="epoch-1")
        assert (result.epoch, result.floor, result.removed, result.skipped, result.next_seq) == ("epoch-1", 4, 4, 0, 10)
        assert (await conn.ack_below("orders", "spark", 4)).removed == 0
        assert [e.seq for e in await conn.read_range("orders")] == list(range(4, 10))
        info = await conn.broker_info(["orders"], cursor="spark")
        assert (info.queues[0].first_seq, info.queues[0].cursor_floor) == (4, 4)
        with pytest.raises(InvalidAcknowledge):
            await conn.ack_below("orders", "spark", 11)
        assert broker.queue("orders").size == 6

    async def test_a_restart_changes_the_epoch(self, conn: Connection, broker: Broker) -> None:
        await fill(conn, 2)
        before = (await conn.broker_info()).epoch
        await broker.restart()  # drops every connection; messages and sequence numbers are gone
        assert (before, broker.epoch) == ("epoch-1", "epoch-2")
        async with await connect(broker) as other:
            with pytest.raises(StaleEpoch, match="restarted"):
                await other.read_range("orders", epoch=before)
            with pytest.raises(StaleEpoch):
                await other.ack_below("orders", "c", 0, epoch=before)
            assert (await other.broker_info()).epoch == "epoch-2"
            assert len(await other.read_range("orders", epoch="epoch-2")) == 0

    async def test_publish_with_dedupe(self, conn: Connection, broker: Broker) -> None:
        batch = [msg(i) for i in range(4)]
        assert await conn.publish(batch, dedupe=True) == PublishResult(4, 0)
        assert await conn.publish([msg(i) for i in range(6)], dedupe=True) == PublishResult(2, 4)
        # once switched on, the destination's check applies to every batch publish
        assert await conn.publish([msg(0)]) == PublishResult(0, 1)
        read = await conn.read_range("orders")
        assert [e.message.message_id for e in read][:6] == [f"ID:t:{i}" for i in range(6)]
        assert read.entries[0].message.body == "body-0" and read.entries[0].message.properties == {"n": 0}

    async def test_publish_fault_reaches_the_caller(self, conn: Connection, broker: Broker) -> None:
        broker.fail_next_publish(after=2)
        with pytest.raises(ConnectionClosed, match="injected"):
            await conn.publish([msg(i) for i in range(5)], dedupe=True)
        assert broker.queue("orders").size == 2
        assert await conn.publish([msg(i) for i in range(5)], dedupe=True) == PublishResult(3, 2)
        assert broker.queue("orders").size == 5


async def test_tcp_stale_epoch_after_restart() -> None:
    """Over TCP a restart drops the connection; a new one sees the new epoch and refuses the old one."""
    broker = Broker(clock=RealClock())
    async with broker:
        server = await start_server(broker, port=0)
        try:
            async with await connect(server.url) as c:
                await c.publish([msg(0)])
                epoch = (await c.broker_info()).epoch
            await broker.restart()
            async with await connect(server.url) as c:
                with pytest.raises(StaleEpoch):
                    await c.read_range("orders", epoch=epoch)
                assert (await c.broker_info()).epoch == broker.epoch != epoch
        finally:
            await asyncio.wait_for(server.close(), TIMEOUT)
