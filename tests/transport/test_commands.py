"""Requests as values: every command has its row in each table, and the in-process link and the TCP link give the
same answer for the same request (the in-process link hands the value to the connection as it is; the TCP link
writes it as a frame that the server turns back into the same value)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from minibroker import Broker, BrokerConnection, DestinationKind, Message
from minibroker._driver.connection import HANDLERS
from minibroker.client import AckMode, Connection, connect
from minibroker.plugins.server import connection as server_connection
from minibroker.plugins.server.tcp import Server
from minibroker.transport import commands as c
from minibroker.transport.tcp_link import REQUESTS

TIMEOUT = 5.0
EVERY_COMMAND = {getattr(c, name) for name in c.__all__} - {c.Command}


def test_every_command_has_a_handler_and_a_tcp_row() -> None:
    assert set(HANDLERS) == EVERY_COMMAND
    assert set(REQUESTS) == EVERY_COMMAND


def test_every_request_frame_of_the_server_becomes_a_command_with_a_handler() -> None:
    """The server's request frames cover every command (a browse with and without a selector are two frames)."""
    produced: set[type] = set()
    for frame_type, (to_command, _answer) in server_connection.REQUESTS.items():
        assert server_connection.COMMANDS[frame_type] in (
            server_connection.ClientConnection.request,
            server_connection.ClientConnection.read_range,  # columnar reads are the server's own; the rest: request
        )
        produced.add(_command_type_of(to_command))
    assert produced == EVERY_COMMAND


def _command_type_of(to_command: Callable[..., Any]) -> type:
    """The command type a server row builds, read from a frame whose every field is a plausible value."""

    class Stub:
        def pop_transaction(self, transaction_id: int) -> int:
            return transaction_id

    class AnyFrame:
        request_id = consumer_id = last_delivered_seq = transaction_id = from_seq = seq = 1
        name = queue = cursor = selector = epoch = "x"
        spec = "temp-queue://x"
        destination = "temp-queue://x:1"
        to_seq = limit = queues = None
        messages: tuple[Message, ...] = ()
        dedupe = False

    return type(to_command(Stub(), AnyFrame()))


async def _answers(conn: Connection, prefix: str) -> list[object]:
    """The same requests on queue ``<prefix>.q``, answers normalized (names without the prefix)."""
    link = conn._link
    queue = f"{prefix}.q"
    session = await conn.create_session(AckMode.AUTO)
    producer = await session.create_producer(queue)
    for body in ("a", "b", "c"):
        await producer.send(body, properties={"n": body})
    out: list[object] = []
    out.append([m.body for m in await link.request(c.Browse(queue))])
    out.append([m.body for m in await link.request(c.Browse(queue, "n = 'b'"))])
    stats = await link.request(c.GetQueueStatistics(queue))
    assert stats is not None
    out.append(attrs.evolve(stats, name=""))
    read = await link.request(c.ReadRange(queue, 0, None, 2))
    out.append([(e.seq, e.message.body, e.redelivery_counter) for e in read.entries])
    acked = await link.request(c.AckBelow(queue, "reader", read.entries[-1].seq + 1, read.epoch))
    out.append(attrs.evolve(acked, queue=""))
    info = await link.request(c.GetBrokerInfo([queue], "reader"))
    out.append([attrs.evolve(p, queue="") for p in info.queues])
    published = await link.request(
        c.Publish([Message(message_id=f"ID:{prefix}-d", body="d", destination=producer.destination)])
    )
    out.append(published)
    out.append(await link.request(c.Purge(queue, "n = 'c'")))
    out.append(await link.request(c.Purge(queue)))
    temporary = await link.request(c.CreateTemporary(DestinationKind.QUEUE, f"{prefix}-conn"))
    out.append(temporary.name.removeprefix(f"{prefix}-conn"))
    out.append(await link.request(c.DeleteTemporary(temporary)))
    txn = link.begin()
    out.append(await link.request(c.Commit(txn)))
    txn = link.begin()
    out.append(await link.request(c.Rollback(txn)))
    await session.close()
    return out


async def test_in_process_and_tcp_answer_alike(broker: Broker, server: Server) -> None:
    async with await connect(broker) as memory, await connect(server.url) as tcp:
        assert await _answers(memory, "mem") == await _answers(tcp, "tcp")


async def test_a_request_goes_through_the_connections_table(broker: Broker) -> None:
    """``dispatch`` is the connection's own method for each command: a refused one raises the method's error."""
    connection: BrokerConnection = broker.connect("c1")
    assert connection.dispatch(c.Purge("nothing.here")) == 0
    assert connection.dispatch(c.GetQueueStatistics("nothing.here")) is None
    connection.close()
