"""A browse sees what ActiveMQ's ``Queue.doBrowse`` shows: expired messages are expired on the way, not shown, and
a prioritized queue is browsed highest priority first (recorded: feat_browse_expired, feat_browse_priority_order)."""

from __future__ import annotations

from minibroker import Broker, Destination, DestinationPolicy, ManualClock, Message


def message(body: str, *, priority: int = 4, expiration: float = 0.0) -> Message:
    return Message(f"ID:{body}", Destination.queue("q"), body, priority=priority, expiration=expiration)


async def test_a_browse_expires_what_it_passes_over() -> None:
    clock = ManualClock()
    async with Broker(clock=clock) as broker:
        connection = broker.connect()
        connection.send(message("short", expiration=1.0))
        connection.send(message("kept"))
        await clock.advance(2.0)  # past the expiry, well before the periodic sweep (30 s)
        assert [m.body for m in broker.browse_all("q")] == ["kept"]
        stats = broker.queue_statistics("q")
        assert stats is not None
        assert (stats.size, stats.expired, stats.dequeued) == (1, 1, 1)
        assert [m.body for m in broker.browse_all("ActiveMQ.DLQ")] == ["short"]  # persistent: dead-lettered


async def test_a_prioritized_queue_is_browsed_by_priority_then_fifo() -> None:
    async with Broker(clock=ManualClock(), policies={"q": DestinationPolicy(prioritized_messages=True)}) as broker:
        connection = broker.connect()
        for body, priority in (("a4", 4), ("b9", 9), ("c0", 0), ("d9", 9), ("e4", 4)):
            connection.send(message(body, priority=priority))
        assert [m.body for m in broker.browse_all("q")] == ["b9", "d9", "a4", "e4", "c0"]


async def test_a_plain_queue_is_browsed_in_send_order() -> None:
    async with Broker(clock=ManualClock()) as broker:
        connection = broker.connect()
        for body, priority in (("a4", 4), ("b9", 9), ("c0", 0)):
            connection.send(message(body, priority=priority))
        assert [m.body for m in broker.browse_all("q")] == ["a4", "b9", "c0"]
