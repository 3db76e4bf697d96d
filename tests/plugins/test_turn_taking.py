"""A client that sends many frames at once has them handled in turns (plugins/_listening.py, TakesTurns): the
broker stops reading it after a turn's worth and handles the rest in later turns of the event loop, so another
client's request is answered in between; nothing is lost and the order holds. (Measured as a user meets it in
tests/benchmarks/mqtt_retained_bench.py: another client waited 1.5 s while a publisher flooded the broker.)"""

from __future__ import annotations

import asyncio
import struct

import pytest

from minibroker import Broker, RealClock
from minibroker.client import connect
from minibroker.plugins import _listening
from minibroker.plugins.mqtt import listener as mqtt_listener
from minibroker.plugins.mqtt import start_mqtt_server
from minibroker.plugins.stomp import listener as stomp_listener
from minibroker.plugins.stomp import start_stomp_server

TURN = 5
FRAMES = 53


@pytest.fixture
def turns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A small turn, and a record of each time a connection gave way."""
    monkeypatch.setattr(mqtt_listener, "FRAMES_PER_TURN", TURN)
    monkeypatch.setattr(stomp_listener, "FRAMES_PER_TURN", TURN)
    given: list[str] = []
    give_way = _listening.TakesTurns._give_way

    def recorded(self: _listening.TakesTurns) -> None:
        given.append(type(self).__name__)
        give_way(self)

    monkeypatch.setattr(_listening.TakesTurns, "_give_way", recorded)
    return given


def _mqtt_connect(client_id: bytes) -> bytes:
    body = struct.pack("!H", 4) + b"MQTT" + bytes([4, 2]) + struct.pack("!H", 0) + struct.pack("!H", len(client_id))
    body += client_id
    return bytes([0x10, len(body)]) + body


def _mqtt_publish(topic: bytes, payload: bytes) -> bytes:
    body = struct.pack("!H", len(topic)) + topic + payload
    return bytes([0x30, len(body)]) + body


def stomp_flood(count: int) -> bytes:
    """A STOMP CONNECT and ``count`` SENDs to queue flood, in one piece."""
    frames = b"".join(b"SEND\ndestination:/queue/flood\n\nm%d\x00" % i for i in range(count))
    return b"CONNECT\naccept-version:1.2\nhost:/\n\n\x00" + frames


async def test_an_mqtt_flood_is_handled_in_turns_in_order(turns: list[str]) -> None:
    async with Broker(clock=RealClock()) as broker:
        server = await start_mqtt_server(broker)
        try:
            async with await connect(broker) as conn:
                sub = await (await conn.create_session()).create_consumer("topic://flood")
                _, writer = await asyncio.open_connection("127.0.0.1", server.port)
                flood = _mqtt_connect(b"flooder") + b"".join(_mqtt_publish(b"flood", b"m%d" % i) for i in range(FRAMES))
                writer.write(flood)  # one write: the broker reads it in one go
                got = []
                for _ in range(FRAMES):
                    msg = await sub.receive(timeout=5)
                    assert msg is not None
                    got.append(msg.body)
                assert got == [b"m%d" % i for i in range(FRAMES)]
                writer.close()
        finally:
            await server.close()
    assert turns.count("_MqttProtocol") >= FRAMES // TURN - 1  # it gave way every TURN packets


async def test_a_stomp_flood_is_handled_in_turns_in_order(turns: list[str]) -> None:
    async with Broker(clock=RealClock()) as broker:
        server = await start_stomp_server(broker)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            frames = stomp_flood(FRAMES) + b"SEND\ndestination:/queue/flood\nreceipt:last\n\nlast\x00"
            writer.write(frames)
            seen = b""
            while b"receipt-id:last" not in seen:
                chunk = await asyncio.wait_for(reader.read(4096), 5)
                assert chunk, seen
                seen += chunk
            assert broker.queue("flood").size == FRAMES + 1
            bodies = [m.body for m in broker.queue("flood").browse()]
            assert bodies == [f"m{i}" for i in range(FRAMES)] + ["last"]
            writer.close()
        finally:
            await server.close()
    assert turns.count("_StompProtocol") >= FRAMES // TURN - 1


async def test_another_client_is_answered_between_the_turns_of_a_flood(turns: list[str]) -> None:
    """The flooder's frames wait behind the other client's CONNECT: it is answered before the flood is done."""
    async with Broker(clock=RealClock()) as broker:
        server = await start_stomp_server(broker)
        try:
            _, flooder = await asyncio.open_connection("127.0.0.1", server.port)
            frames = stomp_flood(2000)
            reader, other = await asyncio.open_connection("127.0.0.1", server.port)
            flooder.write(frames)
            other.write(b"CONNECT\naccept-version:1.2\nhost:/\n\n\x00")
            answer = await asyncio.wait_for(reader.read(4096), 5)
            assert answer.startswith(b"CONNECTED")
            assert broker.queue("flood").size < 2000  # answered while the flood was still being handled
            flooder.close()
            other.close()
        finally:
            await server.close()


async def test_the_native_protocol_hands_a_read_of_many_frames_over_in_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn of one frame: every frame of a read waits for its own turn of the loop; sends, a transaction and
    acks still come out whole and in order."""
    from support.transports import connect_to

    from minibroker import ManualClock
    from minibroker.client import AckMode
    from minibroker.plugins.server import connection as native

    monkeypatch.setattr(native, "NATIVE_FRAMES_PER_TURN", 1)
    yields = 0
    sleep = asyncio.sleep

    async def counted(delay: float, *args: object) -> object:
        nonlocal yields
        yields += delay == 0
        return await sleep(delay, *args)

    monkeypatch.setattr(native.asyncio, "sleep", counted)
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        conn = await connect_to(broker, "tcp")
        session = await conn.create_session(AckMode.SESSION_TRANSACTED)
        producer = await session.create_producer("turns")
        sends = [producer.send(f"m{i}", persistent=False) for i in range(FRAMES)]
        await asyncio.gather(*sends)  # written back to back: the broker reads several frames at once
        await session.commit()
        reader = await (await conn.create_session()).create_consumer("turns")
        got = [await reader.receive(timeout=1) for _ in range(FRAMES)]
        assert [m.body for m in got if m is not None] == [f"m{i}" for i in range(FRAMES)]
        await conn.close()
    assert yields > 0


async def test_a_native_turn_spans_reads_so_another_client_is_answered_during_a_flood(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """asyncio's StreamReader hands over what it holds without letting the loop run, so a flood read after read
    was one step however small each read: counted per read, a turn never ended (issue 41: another client waited
    0.3 s and more). Small reads here (64 bytes, a frame or two each): the turn of 20 frames still ends, and
    another client's request is answered while the flood's 1,000 sends are still being handled."""
    from minibroker import Destination, Message
    from minibroker.plugins.server import connection as native
    from minibroker.plugins.server.tcp import start_server
    from minibroker.transport.commands import GetQueueStatistics
    from minibroker.transport.tcp_link import TcpLink
    from minibroker.wire import encode_handshake, encode_hello, encode_send

    monkeypatch.setattr(native, "NATIVE_FRAMES_PER_TURN", 20)
    monkeypatch.setattr(native, "READ_SIZE", 64)
    queue = Destination.queue("flood")
    sends = [encode_send(0, Message(f"ID:f-{i}", queue, "x", persistent=False)) for i in range(1000)]
    async with Broker(clock=RealClock()) as broker:
        server = await start_server(broker, port=0)
        try:
            async with await connect(server.url) as other:
                link = other._link
                assert isinstance(link, TcpLink)
                _, flooder = await asyncio.open_connection("127.0.0.1", server.port)
                flooder.write(encode_handshake() + encode_hello(1) + b"".join(sends))
                await flooder.drain()
                stats = await asyncio.wait_for(link.request(GetQueueStatistics("flood")), 5)
                assert stats is None or stats.size < 1000  # answered between the flood's turns
                flooder.close()
        finally:
            await server.close()


async def test_a_stomp_turn_is_also_bounded_in_time(turns: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames cost what they do (a persistent send is a store transaction): past TURN_SECONDS a turn ends before
    its count. A budget of 0 here: a turn is the TURN_CHECK frames between two looks at the clock."""
    monkeypatch.setattr(stomp_listener, "FRAMES_PER_TURN", 10_000)
    monkeypatch.setattr(stomp_listener, "TURN_SECONDS", 0.0)
    async with Broker(clock=RealClock()) as broker:
        server = await start_stomp_server(broker)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(stomp_flood(200) + b"SEND\ndestination:/queue/flood\nreceipt:last\n\nlast\x00")
            seen = b""
            while b"receipt-id:last" not in seen:
                chunk = await asyncio.wait_for(reader.read(4096), 5)
                assert chunk, seen
                seen += chunk
            assert [m.body for m in broker.queue("flood").browse()] == [f"m{i}" for i in range(200)] + ["last"]
            writer.close()
        finally:
            await server.close()
    assert turns.count("_StompProtocol") >= 200 // _listening.TURN_CHECK - 1
