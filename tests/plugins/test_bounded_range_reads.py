"""Issue 15, item 8: one range read over the network cannot make the broker copy a whole queue. Each answer holds at
most MAX_RANGE_MESSAGES messages and about MAX_RANGE_BYTES; readers (the client's ``read_range``, the Spark source's
paging) ask on from the last message until the range's end, so nothing is lost to a short answer."""

from __future__ import annotations

import pytest

from minibroker import Broker, Destination, Message
from minibroker._defaults import MAX_RANGE_BYTES, MAX_RANGE_MESSAGES
from minibroker.client import connect
from minibroker.plugins.server.tcp import start_server
from minibroker.plugins.spark._wire import BlockingClient
from minibroker.plugins.spark.testing import ThreadedBroker
from minibroker.transport.commands import ReadRange


def fill(broker: Broker, queue: str, count: int, size: int) -> None:
    body = b"x" * size
    broker.publish([Message(f"ID:fill:{i}", Destination.queue(queue), body) for i in range(count)])


async def test_one_answer_is_bounded_and_the_client_reads_on() -> None:
    async with Broker() as broker, await start_server(broker, port=0) as server:
        fill(broker, "many", MAX_RANGE_MESSAGES + 500, 10)
        fill(broker, "big", 40, MAX_RANGE_BYTES // 16)  # 16 messages of about a sixteenth each fill one answer
        async with await connect(server.url) as conn:
            first = await conn._link.request(ReadRange("many", 0, None, None, None))
            assert len(first.entries) == MAX_RANGE_MESSAGES
            assert len((await conn._link.request(ReadRange("big", 0, None, None, None))).entries) < 40
            everything = await conn.read_range("many")
            assert [e.seq for e in everything] == list(range(MAX_RANGE_MESSAGES + 500))
            assert len(await conn.read_range("big")) == 40
            assert len(await conn.read_range("many", 5, limit=12_000)) == 10_495


def test_the_spark_pages_go_on_past_a_short_answer() -> None:
    with ThreadedBroker() as tb:
        tb.call(lambda: fill(tb.broker, "big", 40, MAX_RANGE_BYTES // 16))
        with BlockingClient(tb.url) as client:
            pages = list(client.iter_range("big", 0, 40, page=1000))
            assert len(pages) > 1 and [e.seq for p in pages for e in p] == list(range(40))
            parts = list(client.iter_range_columns("big", 0, 40, page=1000))
            assert sum(p.count for p in parts) == 40


@pytest.mark.parametrize("limit", [1, 100])
async def test_a_limit_below_the_bound_is_kept(limit: int) -> None:
    async with Broker() as broker, await start_server(broker, port=0) as server:
        fill(broker, "q", 300, 10)
        async with await connect(server.url) as conn:
            assert len(await conn.read_range("q", limit=limit)) == limit


async def test_a_packet_of_many_range_reads_is_answered_as_the_client_reads() -> None:
    """issue 29: 40 range reads in one packet from a client that reads nothing: the broker answers the next only
    once the socket has taken what went before, so it holds about one answer, not forty (before: 67 MiB -> 2.5 GiB
    for a 1,800-byte packet)."""
    import asyncio

    from minibroker import RealClock, wire

    async with Broker(clock=RealClock()) as broker, await start_server(broker, port=0) as server:
        fill(broker, "big", 32, MAX_RANGE_BYTES // 32)  # one answer: about MAX_RANGE_BYTES
        _reader, writer = await asyncio.open_connection(server.host, server.port)
        requests = b"".join(wire.encode_read_range(i, "big", 0, None, None, None, False) for i in range(2, 42))
        writer.write(wire.encode_handshake() + wire.encode_hello(1, None, None, None) + requests)
        await writer.drain()
        (client,) = server._connections

        def buffered() -> int:
            return client.out_bytes + client.transport.get_write_buffer_size()

        async with asyncio.timeout(30):
            while buffered() == 0:  # the first answer
                await asyncio.sleep(0.01)  # what is under test is the socket's backpressure: real time
        held = []
        for _ in range(30):  # the broker's buffer over a while of a client that reads nothing
            await asyncio.sleep(0.01)
            held.append(buffered())
        assert max(held) > MAX_RANGE_BYTES // 2  # it did answer
        assert max(held) < 3 * MAX_RANGE_BYTES  # and not forty times
        writer.close()
