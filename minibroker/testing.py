"""Tools for tests: virtual time, waiting for a queue, reading dead letters and delivery histories.

Every helper here reads well in a test and fails with the relevant history, not a bare ``assert 0 == 1``:

    await wait_for_queue_size(broker, "orders", 0)
    [letter] = dead_letters(broker)
    assert "exceeds redelivery policy limit" in letter.cause
    print(delivery_history(broker, letter.message_id))
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from ._core.history import DeadLetterRecord, HistoryRecord
from ._driver.broker import Broker
from ._driver.link import MemoryLink
from .clock import ManualClock, RealClock, poll_sleep, settle
from .message import Body, Destination

if TYPE_CHECKING:
    from minibroker.client import Connection

__all__ = [
    "DeadLetter",
    "DeliveryHistory",
    "ManualClock",
    "RealClock",
    "advance_to_next_scheduled",
    "assert_dead_lettered",
    "crash_connection",
    "dead_letters",
    "delivery_history",
    "settle",
    "wait_for_consumers",
    "wait_for_queue_size",
]


@attrs.frozen(slots=True)
class DeadLetter:
    """A message sitting in a dead-letter queue, with why it got there."""

    queue: str
    message_id: str
    body: Body
    cause: str | None
    original_destination: Destination | None


def dead_letters(broker: Broker, queue: str | None = None) -> list[DeadLetter]:
    """The messages in ``queue``, or in every dead-letter queue of the broker (``ActiveMQ.DLQ``, individual
    ``ActiveMQ.DLQ.Queue.*`` ones, custom prefixes and ``%DLQ%<group>``), oldest first."""
    if queue is not None:
        names = [queue]
    else:
        known = {r.dead_letter_queue for r in broker.dead_letters() if r.dead_letter_queue}
        names = sorted(n for n in broker.queue_names() if n in known or "DLQ" in n)
    letters = []
    for name in names:
        for message in broker.queue(name).browse():
            cause = message.properties.get("dlqDeliveryFailureCause")
            letters.append(
                DeadLetter(
                    name,
                    message.message_id,
                    message.body,
                    None if cause is None else str(cause),
                    message.original_destination,
                )
            )
    return letters


def assert_dead_lettered(
    broker: Broker, message_id: str, *, cause_contains: str | None = None, queue: str | None = None
) -> DeadLetter:
    """Assert that ``message_id`` is in a dead-letter queue (with a cause containing ``cause_contains``)."""
    letters = dead_letters(broker, queue)
    for letter in letters:
        if letter.message_id == message_id:
            if cause_contains is not None and (letter.cause is None or cause_contains not in letter.cause):
                raise AssertionError(
                    f"{message_id} is in {letter.queue} but its cause is {letter.cause!r}, "
                    f"not containing {cause_contains!r}\n\n{delivery_history(broker, message_id)}"
                )
            return letter
    listed = "\n".join(f"  {x.queue}: {x.message_id} {x.body!r}" for x in letters) or "  (none)"
    raise AssertionError(
        f"{message_id} is not in a dead-letter queue; dead letters:\n{listed}\n\n{delivery_history(broker, message_id)}"
    )


@attrs.frozen(slots=True)
class DeliveryHistory:
    """Everything the broker did with one message; ``str()`` gives a table."""

    message_id: str
    records: tuple[HistoryRecord, ...]

    @property
    def dispatches(self) -> int:
        return sum(1 for r in self.records if r.event == "dispatched")

    @property
    def ack_types(self) -> list[str]:
        return [r.ack_type for r in self.records if r.event == "ack" and r.ack_type is not None]

    @property
    def redelivery_delays(self) -> list[float]:
        """The delay before each redelivery, in order: those the client announced before a local redelivery
        (REDELIVERED acks) and those the broker scheduled (the redelivery plugin, which STOMP and MQTT clients
        get)."""
        return [
            r.delay
            for r in self.records
            if r.delay is not None and (r.ack_type == "REDELIVERED" or r.event == "redelivery-scheduled")
        ]

    @property
    def outcome(self) -> str:
        """The last thing that happened: consumed, dead-lettered, dropped, expired, or pending."""
        for record in reversed(self.records):
            if record.event in ("dead-lettered", "dropped", "expired"):
                return record.event
            if record.event == "committed" and record.consumer_id is not None:
                return "consumed"
            consumed = record.ack_type in ("STANDARD", "INDIVIDUAL")
            if record.event == "ack" and consumed and record.transaction_id is None:
                return "consumed"
        return "pending"

    def __str__(self) -> str:
        if not self.records:
            return f"no history recorded for {self.message_id}"
        start = self.records[0].time
        lines = [
            f"history of {self.message_id}:",
            f"  {'+s':>9}  {'event':<21} {'consumer':>8}  {'ack':<11} {'txn':>4} {'counter':>7}  detail",
        ]
        for r in self.records:
            detail = r.detail or ""
            if r.delay is not None:
                detail = f"redelivery in {r.delay:g} s" + (f"; {detail}" if detail else "")
            if r.destination:
                detail = f"-> {r.destination}" + (f"; {detail}" if detail else "")
            lines.append(
                f"  {r.time - start:>9.3f}  {r.event:<21} {'' if r.consumer_id is None else r.consumer_id:>8}  "
                f"{r.ack_type or '':<11} {'' if r.transaction_id is None else r.transaction_id:>4} "
                f"{r.redelivery_counter:>7}  {detail[:160]}"
            )
        return "\n".join(lines)


def crash_connection(connection: Connection) -> None:
    """Break one in-process client's transport now, as if its process died between receive and ack: the broker
    gives back everything the connection held (redelivered, counter +1). A fault-tolerant connection reconnects;
    any other one is closed."""
    link = connection._link
    if not isinstance(link, MemoryLink):
        raise TypeError("crash_connection works on in-process connections; drop TCP ones with broker.drop_connections")
    link.drop()


def delivery_history(broker: Broker, message_id: str) -> DeliveryHistory:
    """The delivery history of one message: each dispatch, ack (type, transaction, delay), release, dead letter."""
    return DeliveryHistory(message_id, broker.history(message_id))


async def wait_for_queue_size(broker: Broker, queue: str, size: int, *, timeout: float = 10.0) -> None:
    """Wait until ``queue`` holds ``size`` messages (in flight included), moving virtual time if the broker runs on
    a :class:`ManualClock` (with autojump, letting it move time); fails after ``timeout`` (virtual or real) seconds
    with the queue's state."""
    view = broker.queue(queue)
    if await _wait_until(broker, lambda: view.size == size, timeout):
        return
    stats = view.statistics()
    raise AssertionError(
        f"queue {queue!r} holds {stats.size} message(s), not {size}, after {timeout} s "
        f"(in flight {stats.inflight}, enqueued {stats.enqueued}, dequeued {stats.dequeued}, "
        f"consumers {stats.consumers})\n" + _describe(broker.pending_work(), broker.dead_letters())
    )


async def advance_to_next_scheduled(broker: Broker) -> float:
    """Move the broker's :class:`ManualClock` to the scheduler's next delivery (a delayed or repeating message, a
    broker redelivery) and let it happen; returns the new ``clock.elapsed``. Fails when nothing is scheduled or the
    broker is not on a manual clock. For a test of "this job runs every night": one call per night, milliseconds."""
    clock = broker.clock
    if not isinstance(clock, ManualClock):
        raise AssertionError("advance_to_next_scheduled needs a broker on a ManualClock")
    due = broker.next_scheduled_time()
    if due is None:
        raise AssertionError("nothing is scheduled")
    await clock.advance_to(due)
    await settle()
    return clock.elapsed


async def wait_for_consumers(broker: Broker, queue: str, count: int, *, timeout: float = 10.0) -> None:
    """Wait until ``queue`` has ``count`` consumers: a client in another task, thread or process (a STOMP client
    that subscribes, or re-subscribes after a reconnect) is ready to receive. Time moves as for
    :func:`wait_for_queue_size`."""
    view = broker.queue(queue)
    if await _wait_until(broker, lambda: view.consumers == count, timeout):
        return
    raise AssertionError(f"queue {queue!r} has {view.consumers} consumer(s), not {count}, after {timeout} s")


async def _wait_until(broker: Broker, done: Callable[[], bool], timeout: float) -> bool:
    """Settle and check ``done`` until it holds (True) or ``timeout`` passes (False), on the broker's clock: with
    autojump the timeout is a virtual deadline like any other, reached once everything (peers too) waits; a manual
    clock without autojump is advanced deadline by deadline; a real clock is polled."""
    clock = broker.clock
    start = clock.now()
    real_deadline = time.monotonic() + timeout
    autojump = isinstance(clock, ManualClock) and clock.autojump
    guard = clock.call_at(start + timeout, lambda: None) if autojump else None
    try:
        while True:
            await settle()
            if done():
                return True
            if autojump:
                if clock.now() >= start + timeout or time.monotonic() >= real_deadline:
                    return False
                await poll_sleep(0.002)
            elif isinstance(clock, ManualClock):
                deadline = clock.next_deadline()
                if deadline is None or deadline - start > timeout:
                    return False
                await clock.advance_to(deadline)
            else:
                if time.monotonic() >= real_deadline:
                    return False
                await asyncio.sleep(0.002)
    finally:
        if guard is not None:
            guard.cancel()


def _describe(pending: Sequence[str], failures: Sequence[DeadLetterRecord]) -> str:
    lines = []
    if pending:
        lines.append("still pending:")
        lines.extend(f"  - {p}" for p in pending)
    if failures:
        lines.append("dead-lettered or dropped:")
        for f in failures:
            cause = (f.cause or "no cause given")[:200]
            lines.append(f"  - {f.message_id} from {f.destination} -> {f.dead_letter_queue or 'dropped'}: {cause}")
    return "\n".join(lines)
