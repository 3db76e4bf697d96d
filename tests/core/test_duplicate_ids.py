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
        first, second = broker.connect(), broker.connect()
        for n in range(3):
            first.send(message(f"ID:shared:{n}", f"first-{n}"))
            second.send(message(f"ID:shared:{n}", f"second-{n}"))
        second.send(message("ID:own", "own"))
        assert [m.body for m in broker.browse_all("q")] == ["first-0", "first-1", "first-2", "own"]

        received: list[Dispatch] = []
        consumer_connection = broker.connect()
        consumer = consumer_connection.add_consumer(ConsumerInfo(QUEUE, 10), received.append)
        await broker.run_ready()
        assert [d.message.body for d in received if d.message is not None] == ["first-0", "first-1", "first-2", "own"]
        consumer_connection.ack(MessageAck(consumer, AckType.STANDARD, "ID:own", "ID:shared:0", 4))
        await broker.run_ready()
        stats = broker.queue_statistics("q")
        assert stats is not None and (stats.size, stats.inflight, stats.enqueued, stats.dequeued) == (0, 0, 4, 4)

        await broker.restart()
        assert broker.browse_all("q") == []


async def test_an_id_is_free_again_once_acked() -> None:
    async with Broker(clock=ManualClock()) as broker:
        connection = broker.connect()
        connection.send(message("ID:again", "one"))
        received: list[Dispatch] = []
        consumer = connection.add_consumer(ConsumerInfo(QUEUE, 10), received.append)
        await broker.run_ready()
        connection.ack(MessageAck(consumer, AckType.STANDARD, "ID:again"))
        connection.send(message("ID:again", "two"))
        await broker.run_ready()
        assert [d.message.body for d in received if d.message is not None] == ["one", "two"]
