"""Bad input over real sockets: more than 10,000 random, mutated and out-of-order frames on many raw connections to
a running server, then proof that nothing was hurt.

The broker keeps persistent messages in a store (``data_dir``). Before the fuzz, a normal client sends 300
persistent messages to ``fuzz.accounted``, and a normal consumer takes 60 of them and acks 40. During the fuzz, some
raw connections first subscribe properly to ``fuzz.accounted`` (taking messages in flight) and then misbehave until
the server throws them out. The raw connections otherwise only name scratch destinations, so nothing they do can
legitimately consume an accounted message. Afterwards:

* every byte the server sent on a raw connection decodes as server frames, and nothing follows a fatal ERROR;
* the server holds no raw connection any more; a healthy client sends and receives;
* each of the 300 messages was either acked by the normal consumer or is still in the queue (and in the store),
  exactly once; those that were in flight on thrown-out connections come back marked redelivered.

The fuzz is seeded (the frames are the same on every run; only the interleaving of connections varies) and bounded
in time: every wait has a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import struct
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from minibroker import AckType, Broker, ConsumerInfo, Destination, Dispatch, Message, MessageAck, RealClock, wire
from minibroker.client import AckMode, connect
from minibroker.errors import RemoteProtocolError
from minibroker.plugins.server.tcp import Server, start_server
from minibroker.store import SqliteStore
from minibroker.wire import Error, FrameDecoder

TIMEOUT = 10.0
SEED = 4_2026
WORKERS = 8
MIN_FRAMES = 10_000
ACCOUNTED = "fuzz.accounted"
SENT = 300
MAX_FRAME = 64 * 1024


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Broker, Server]]:
    async with Broker(clock=RealClock(), data_dir=tmp_path / "data") as broker:
        server = await start_server(broker, port=0, max_frame_size=MAX_FRAME)
        try:
            yield broker, server
        finally:
            await asyncio.wait_for(server.close(), TIMEOUT)


# -- frame generation ---------------------------------------------------------------------------------------------


def scratch_message(rng: random.Random, n: int) -> Message:
    dest = rng.choice(
        [Destination.queue("fuzz.scratch"), Destination.queue("fuzz.scratch.b"), Destination.topic("fuzz.topic")]
    )
    props = rng.choice([{}, {"k": n}, {"s": "x" * rng.randrange(40), "f": 1.5, "b": b"\x00", "n": None}])
    body: str | bytes = rng.choice(["", "text", "ü" * 10, b"\x00\xffbin"])
    return Message(f"ID:fuzz-{n}", dest, body, props, rng.randrange(10), rng.random() < 0.5)


def valid_frames(rng: random.Random, n: int) -> list[bytes]:
    """Well-formed client (and a few server) frames that name only scratch destinations or made-up ids."""
    rid = rng.randrange(1, 1000)
    consumer = rng.randrange(1, 50)
    txn = rng.randrange(1, 5)
    scratch = rng.choice(["fuzz.scratch", "fuzz.scratch.b", "never.created"])
    info = ConsumerInfo(
        Destination.queue(scratch),
        rng.choice([0, 1, 10]),
        rng.choice([None, "k > 1", "color = 'red'", "((("]),
        rng.randrange(-2, 3),
    )
    ack_type = rng.choice(list(AckType))
    return [
        wire.encode_hello(rid, rng.choice([None, "client"]), rng.choice([None, "u"]), None),
        wire.encode_add_consumer(rid, info),
        wire.encode_remove_consumer(rid, consumer, rng.choice([-1, 5])),
        wire.encode_send(rid, scratch_message(rng, n), rng.choice([None, txn]), rng.random() < 0.5),
        wire.encode_ack(
            MessageAck(
                consumer,
                ack_type,
                f"ID:never-{n}",
                rng.choice([None, "ID:x"]),
                rng.randrange(0, 3),
                rng.choice([None, txn]),
                "cause" if ack_type == AckType.POISON else None,
            )
        ),
        wire.encode_pull(consumer, rng.choice([-1.0, 0.0, 0.01])),
        wire.encode_begin(txn),
        wire.encode_commit(rid, txn),
        wire.encode_rollback(rid, txn),
        wire.encode_browse(rid, scratch),
        wire.encode_get_queue_statistics(rid, scratch),
        wire.encode_list_queues(rid),
        wire.encode_purge(rid, "fuzz.scratch.b"),
        wire.encode_read_range(rid, scratch, 0, None, 5),
        wire.encode_get_broker_info(rid, [scratch], None),
        wire.encode_publish(rid, [scratch_message(rng, n), scratch_message(rng, n + 1)], rng.random() < 0.5),
        # frames only the server sends
        wire.encode_ok(rid),
        wire.encode_dispatch(Dispatch(consumer, scratch_message(rng, n), 1, 0)),
        wire.encode_error(rid, "x", "y"),
    ]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice("aZ0._-:>*' =()ü\x00✗") for _ in range(rng.randrange(12)))


def _name(rng: random.Random) -> str:
    return "fuzz.r." + "".join(rng.choice("abcxyz") for _ in range(rng.randint(1, 4)))


def _int(rng: random.Random) -> int:
    return rng.choice([0, 1, -1, 2, rng.randrange(100), 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)])


def random_request(rng: random.Random, n: int) -> bytes:
    """A well-encoded client request with random field values: unknown ids, extreme numbers, odd selectors,
    NaN timeouts, non-persistent and persistent sends to random scratch queues..."""
    rid = rng.randrange(2**32)
    kind = rng.randrange(15)
    if kind == 0:
        props = {_text(rng) or "k": rng.choice([_int(rng), _text(rng), None, True, 1.5, b"\x01"])}
        message = Message(
            _text(rng) or "ID:x",
            Destination.queue(_name(rng)),
            rng.choice([_text(rng), b"\xff"]),
            props,
            rng.randrange(10),
            rng.random() < 0.5,
            rng.random() * 1e9,
            rng.choice([0.0, 1.0, 1e12]),
            group_id=rng.choice([None, _text(rng)]),
            group_seq=_int(rng),
        )
        return wire.encode_send(rid, message, rng.choice([None, _int(rng)]), rng.random() < 0.5)
    if kind == 1:
        info = ConsumerInfo(
            Destination.queue(_name(rng)),
            rng.choice([0, 1, 1000, 2**31 - 1, -1]),
            rng.choice([None, _text(rng), "JMSPriority > 4", "a IN ('x')"]),
            rng.randrange(-128, 128),
            rng.random() < 0.3,
            rng.random() < 0.3,
            rng.random() < 0.3,
            _int(rng),
        )
        return wire.encode_add_consumer(rid, info)
    if kind == 2:
        return wire.encode_ack(
            MessageAck(
                _int(rng),
                rng.choice(list(AckType)),
                _text(rng),
                rng.choice([None, _text(rng)]),
                _int(rng),
                rng.choice([None, _int(rng)]),
                rng.choice([None, _text(rng)]),
            )
        )
    if kind == 3:
        return wire.encode_pull(
            _int(rng), rng.choice([-1.0, 0.0, 1e-9, 0.5, 1e300, float("nan"), float("inf"), -float("inf")])
        )
    if kind == 4:
        return wire.encode_begin(_int(rng))
    if kind == 5:
        return wire.encode_commit(rid, _int(rng))
    if kind == 6:
        return wire.encode_rollback(rid, _int(rng))
    if kind == 7:
        return wire.encode_remove_consumer(rid, _int(rng), _int(rng))
    if kind == 8:
        return wire.encode_browse(rid, _name(rng))
    if kind == 9:
        return wire.encode_purge(rid, _name(rng))
    if kind == 10:
        return wire.encode_get_queue_statistics(rid, _name(rng))
    if kind == 11:
        return wire.encode_read_range(
            rid,
            _name(rng),
            rng.randrange(2**40),
            rng.choice([None, rng.randrange(9)]),
            rng.choice([None, 0, 2**40]),
            rng.choice([None, _text(rng)]),
        )
    if kind == 12:
        return wire.encode_get_broker_info(rid, rng.choice([None, [_name(rng)]]), rng.choice([None, _text(rng)]))
    if kind == 13:
        return wire.encode_publish(rid, [scratch_message(rng, n)], rng.random() < 0.5)
    return wire.encode_list_queues(rid)


def mutate(rng: random.Random, frame: bytes) -> bytes:
    buf = bytearray(frame)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(8)
        if op == 0 and buf:  # flip bits
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        elif op == 1 and len(buf) > 5:  # truncate, keeping the announced length (or fixing it)
            del buf[rng.randrange(5, len(buf)) :]
            if rng.random() < 0.5:
                buf[0:4] = struct.pack(">I", len(buf) - 4)
        elif op == 2:  # append garbage and fix the length
            buf += rng.randbytes(rng.randint(1, 16))
            buf[0:4] = struct.pack(">I", len(buf) - 4)
        elif op == 3 and len(buf) >= 4:  # lie about the length
            buf[0:4] = struct.pack(">I", rng.choice([0, 1, len(buf), MAX_FRAME + 1, 2**32 - 1, rng.randrange(2**32)]))
        elif op == 4 and len(buf) > 4:  # another frame type, known or not
            buf[4] = rng.randrange(256)
        elif op == 5 and len(buf) > 9:  # a u32 field (string length, count) rewritten
            pos = rng.randrange(5, len(buf) - 3)
            buf[pos : pos + 4] = struct.pack(">I", rng.choice([0, 1, 0xFFFFFFFF, rng.randrange(2**32)]))
        elif op == 6 and len(buf) > 6:  # a slice deleted, length fixed
            a = rng.randrange(5, len(buf))
            del buf[a : a + rng.randint(1, 8)]
            buf[0:4] = struct.pack(">I", len(buf) - 4)
        elif op == 7 and len(buf) > 5:  # a string made invalid UTF-8
            buf[rng.randrange(5, len(buf))] = 0xFF
    return bytes(buf)


def random_frame(rng: random.Random) -> bytes:
    body = rng.randbytes(rng.randint(1, 64))
    if rng.random() < 0.5:
        return struct.pack(">I", len(body)) + body  # a plausible length, a random payload
    return body


#: frame types a well-behaved prefix may use: client requests that fail (or not) without closing the connection
_SAFE = {
    wire.FrameType.ADD_CONSUMER,
    wire.FrameType.REMOVE_CONSUMER,
    wire.FrameType.SEND,
    wire.FrameType.ACK,
    wire.FrameType.PULL,
    wire.FrameType.BEGIN,
    wire.FrameType.COMMIT,
    wire.FrameType.ROLLBACK,
    wire.FrameType.BROWSE,
    wire.FrameType.GET_QUEUE_STATISTICS,
    wire.FrameType.LIST_QUEUES,
    wire.FrameType.PURGE,
    wire.FrameType.READ_RANGE,
    wire.FrameType.GET_BROKER_INFO,
    wire.FrameType.PUBLISH,
}


class Plan:
    """One raw connection's script: an opening (handshake, HELLO, maybe a real subscription), then fuzz frames
    (random-valued requests, mutated frames, random bytes) up to the one that makes the server close the connection.

    The frames are fed here to the server's own decoder with the server's HELLO rules as they are generated, so a
    plan stops at the frame after which the server reads nothing more (a malformed frame, a second HELLO, a CLOSE),
    and ``fuzzed`` counts the fuzz frames the server reads."""

    def __init__(self, rng: random.Random, templates: list[bytes], n: int) -> None:
        self.opening: list[bytes] = []
        self.subscribes = False
        self.frames: list[bytes] = []
        handshake = wire.encode_handshake()
        roll = rng.random()
        if roll < 0.02:
            self.opening.append(mutate(rng, handshake))
            return
        if roll < 0.03:
            self.opening.append(wire.encode_handshake(2))  # a version the server does not speak
            return
        self.opening.append(handshake)
        if rng.random() < 0.03:
            self.frames.append(rng.choice(templates))  # a command before HELLO
            return
        self.opening.append(wire.encode_hello(1, None))
        if rng.random() < 0.1:
            self.subscribes = True
            self.opening.append(
                wire.encode_add_consumer(2, ConsumerInfo(Destination.queue(ACCOUNTED), rng.choice([1, 3, 5])))
            )
        decoder = FrameDecoder(sender="client", max_frame_size=MAX_FRAME)
        for data in self.opening:
            decoder.receive_data(data)
        list(decoder)
        for i in range(rng.randint(5, 60)):
            roll = rng.random()
            if roll < 0.6:
                frame = random_request(rng, n * 1000 + i)
            elif roll < 0.9:
                frame = mutate(rng, rng.choice(templates))
            else:
                frame = random_frame(rng)
            self.frames.append(frame)
            decoder.receive_data(frame)
            try:
                if any(isinstance(f, wire.Hello | wire.Close) for f in decoder):
                    return
            except RemoteProtocolError:
                return

    @property
    def fuzzed(self) -> int:
        return len(self.frames)


async def run_plan(host: str, port: int, plan: Plan, dispatched: list[str]) -> tuple[int, list[object]]:
    """Play ``plan`` on a raw socket; return (fuzz frames written, frames the server sent)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), TIMEOUT)
    decoder = FrameDecoder(sender="server", max_frame_size=2**31)
    frames: list[object] = []

    async def read_some() -> bool:
        chunk = await asyncio.wait_for(reader.read(65536), TIMEOUT)
        decoder.receive_data(chunk)
        frames.extend(decoder)
        return bool(chunk)

    written = 0
    try:
        writer.write(b"".join(plan.opening))
        if plan.subscribes:
            # let the subscription take its messages before the garbage comes: wait for its answer
            while not any(isinstance(f, wire.ConsumerAdded | Error) for f in frames):
                if not await read_some():
                    break
        # only up to the frame that makes the server close (see Plan): more would sit unread in its socket, and
        # closing a socket with unread data resets the connection, which may lose the server's last frames
        for frame in plan.frames:
            writer.write(frame)
            written += 1
        await asyncio.wait_for(writer.drain(), TIMEOUT)
        writer.write_eof()
    except (ConnectionError, OSError):
        pass  # the server threw us out already
    try:
        while await read_some():
            pass
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await asyncio.wait_for(writer.wait_closed(), TIMEOUT)
    assert decoder.buffered == 0, f"{decoder.buffered} bytes of a partial frame at the end"
    for frame in frames:
        if isinstance(frame, Dispatch) and frame.message is not None:
            dispatched.append(frame.message.message_id)
    return written, frames


def check_stream(frames: list[object]) -> int:
    """The server's answer is a handshake, then frames; a fatal ERROR, if any, is the last. Returns fatal count."""
    assert frames and isinstance(frames[0], wire.Handshake), frames[:1]
    fatal = [i for i, f in enumerate(frames) if isinstance(f, Error) and f.fatal]
    assert len(fatal) <= 1 and (not fatal or fatal[0] == len(frames) - 1), frames[-3:]
    for f in frames:
        if isinstance(f, Error):
            assert f.code and f.message
    return len(fatal)


async def test_fuzz_over_sockets(served: tuple[Broker, Server], caplog: pytest.LogCaptureFixture) -> None:
    broker, server = served
    started = time.monotonic()

    # -- before: persistent messages, some of them acked by a normal consumer --------------------------------------
    async with await connect(server.url) as conn:
        producer = await (await conn.create_session()).create_producer(ACCOUNTED)
        for i in range(SENT):
            await producer.send(f"m{i:03d}", persistent=True)
    all_ids = {e.message.message_id for e in broker.core.queues[ACCOUNTED].entries.values()}
    assert len(all_ids) == SENT
    acked: set[str] = set()
    normal = await connect(server.url)
    session = await normal.create_session(AckMode.INDIVIDUAL_ACKNOWLEDGE)
    consumer = await session.create_consumer(ACCOUNTED, prefetch=60)
    for i in range(60):
        msg = await consumer.receive(timeout=TIMEOUT)
        assert msg is not None
        if i % 3 != 2:
            await msg.acknowledge()
            acked.add(msg.message_id)
    await consumer.close()  # the 20 unacked ones go back, redelivered
    await normal.close()

    # -- the fuzz -------------------------------------------------------------------------------------------------
    rng = random.Random(SEED)
    templates = [frame for i in range(100) for frame in valid_frames(rng, i)]
    plans: list[Plan] = []
    fuzzed = 0
    while fuzzed < MIN_FRAMES:
        plan = Plan(rng, templates, len(plans))
        plans.append(plan)
        fuzzed += plan.fuzzed
    queue: asyncio.Queue[Plan] = asyncio.Queue()
    for plan in plans:
        queue.put_nowait(plan)
    counts = {"written": 0, "connections": 0, "fatal": 0, "errors": 0}
    dispatched: list[str] = []

    async def worker() -> None:
        while not queue.empty():
            plan = queue.get_nowait()
            written, frames = await run_plan(server.host, server.port, plan, dispatched)
            counts["written"] += written + len(plan.opening)
            counts["connections"] += 1
            counts["fatal"] += check_stream(frames)
            counts["errors"] += sum(isinstance(f, Error) for f in frames)

    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(WORKERS))), 120)
    assert counts["connections"] == len(plans) and counts["fatal"] > len(plans) // 2, counts
    assert counts["errors"] > fuzzed // 3, counts
    # every refusal was an error frame: nothing reached the broker that made it fail unexpectedly
    failures = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert not failures, failures[:5]

    # -- after: the server is clean and healthy -------------------------------------------------------------------
    async def gone() -> None:
        while server.connections or broker.statistics().connections:
            await asyncio.sleep(0)

    await asyncio.wait_for(gone(), TIMEOUT)
    async with await connect(server.url) as conn:
        session = await conn.create_session()
        await (await session.create_producer("fuzz.healthy")).send("still alive")
        got = await (await session.create_consumer("fuzz.healthy")).receive(timeout=TIMEOUT)
        assert got is not None and got.body == "still alive"

        # every accounted message: acked before, or still there exactly once (in the queue and in the store)
        remaining = broker.queue(ACCOUNTED).size
        assert remaining == SENT - len(acked)
        store = broker.store
        assert isinstance(store, SqliteStore) and store.count(ACCOUNTED) == remaining
        consumer = await (await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)).create_consumer(ACCOUNTED)
        drained = []
        for _ in range(remaining):
            msg = await consumer.receive(timeout=TIMEOUT)
            assert msg is not None
            drained.append(msg)
        ids = [m.message_id for m in drained]
        assert len(set(ids)) == len(ids) and set(ids) == all_ids - acked
        in_flight_on_fuzz = set(dispatched) & all_ids
        assert in_flight_on_fuzz, "no raw connection held accounted messages: the redelivery path was not tested"
        assert all(m.redelivered for m in drained if m.message_id in in_flight_on_fuzz)
        await drained[-1].acknowledge()
        assert await consumer.receive(timeout=0) is None
    assert broker.queue(ACCOUNTED).size == 0 and store.count(ACCOUNTED) == 0
    elapsed = time.monotonic() - started
    print(
        f"\nfuzz: {fuzzed} random and mutated frames read by the server ({counts['written']} frames in all) "
        f"on {counts['connections']} connections, {counts['errors']} error "
        f"frames ({counts['fatal']} fatal), {len(set(dispatched) & all_ids)} accounted messages were in flight on "
        f"thrown-out connections; {elapsed:.1f} s"
    )
