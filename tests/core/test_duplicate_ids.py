"""A send whose message id the destination already holds is dropped, as ActiveMQ's store and cursor audit drop it:
no message is stranded and no other message's accounting is touched (issue 15)."""

from __future__ import annotations

from pathlib import Path

from minibroker import AckType, Broker, ConsumerInfo, Destination, ManualClock, Message, MessageAck
from minibroker._core.effects import Dispatch

QUEUE = Destination.queue("q")


def message(message_id: str, body: str) -> Message:
    return Message(message_id, QUEUE, body)


async def test_two_producers_sharing_ids_strand_nothing(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(), data_dir=tmp_path) as broker:
        first, second = broker.open_connection(), broker.open_connection()
        for n in range(3):
            broker.send(first, message(f"ID:shared:{n}", f"first-{n}"))
            broker.send(second, message(f"ID:shared:{n}", f"second-{n}"))
        broker.send(second, message("ID:own", "own"))
        assert [m.body for m in broker.browse_all("q")] == ["first-0", "first-1", "first-2", "own"]

        received: list[Dispatch] = []
        consumer_connection = broker.open_connection()
        consumer = broker.add_consumer(consumer_connection, ConsumerInfo(QUEUE, 10), received.append)
        await broker.run_ready()
        assert [d.message.body for d in received if d.message is not None] == ["first-0", "first-1", "first-2", "own"]
        broker.ack(consumer_connection, MessageAck(consumer, AckType.STANDARD, "ID:own", "ID:shared:0", 4))
        await broker.run_ready()
        stats = broker.queue_statistics("q")
        assert stats is not None and (stats.size, stats.inflight, stats.enqueued, stats.dequeued) == (0, 0, 4, 4)

        await broker.restart()
        assert broker.browse_all("q") == []


async def test_an_id_is_free_again_once_acked() -> None:
    async with Broker(clock=ManualClock()) as broker:
        connection = broker.open_connection()
        broker.send(connection, message("ID:again", "one"))
        received: list[Dispatch] = []
        consumer = broker.add_consumer(connection, ConsumerInfo(QUEUE, 10), received.append)
        await broker.run_ready()
        broker.ack(connection, MessageAck(consumer, AckType.STANDARD, "ID:again"))
        broker.send(connection, message("ID:again", "two"))
        await broker.run_ready()
        assert [d.message.body for d in received if d.message is not None] == ["one", "two"]
