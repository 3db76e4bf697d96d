"""The broker's memory of what happened to each message: every send, dispatch, ack (with its type), release,
expiry and dead-lettering, with the time and the consumer. Tests read it to explain a failure."""

from __future__ import annotations

from collections import deque

import attrs

from ..message import Body

__all__ = ["DeadLetterRecord", "History", "HistoryRecord"]


@attrs.frozen(slots=True)
class HistoryRecord:
    """One thing that happened to a message.

    ``event`` is one of: sent, dispatched, ack, released (its consumer closed holding it), redelivery-scheduled,
    expired, dead-lettered, dropped, committed, rolled-back, discarded (a transacted send rolled back), purged.
    Each stands for a move of the message's lifecycle (lifecycle.py).
    """

    time: float
    event: str
    consumer_id: int | None = None
    ack_type: str | None = None
    transaction_id: int | None = None
    redelivery_counter: int = 0
    detail: str | None = None
    destination: str | None = None
    #: for REDELIVERED acks: how long the client waits before it redelivers
    delay: float | None = None


@attrs.frozen(slots=True)
class DeadLetterRecord:
    """A message the broker gave up on: dead-lettered to ``dead_letter_queue``, or dropped (None) because the
    strategy does not keep it (non-persistent, expired, already dead-lettered once, or a DLQ loop)."""

    time: float
    message_id: str
    body: Body
    destination: str
    dead_letter_queue: str | None
    #: the poison cause (None when the client gave none, as a STOMP NACK does)
    cause: str | None


class History:
    """Records per message id, keeping the most recent ``limit`` messages (0 turns recording off)."""

    __slots__ = ("_order", "enabled", "limit", "records")

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self.enabled = limit > 0
        # plain tuples on the hot path; HistoryRecord objects are built only when a test reads them
        self.records: dict[str, list[tuple[object, ...]]] = {}
        # the ids in recording order, to drop the oldest in O(1) (a plain dict's next(iter()) would skip every slot
        # deleted before, once the history is full: on every new message; an OrderedDict is slower to fill)
        self._order: deque[str] = deque()

    def add(
        self,
        message_id: str,
        time: float,
        event: str,
        consumer_id: int | None = None,
        ack_type: str | None = None,
        transaction_id: int | None = None,
        redelivery_counter: int = 0,
        detail: str | None = None,
        destination: str | None = None,
        delay: float | None = None,
    ) -> None:
        if self.enabled:
            self.note(
                message_id,
                (time, event, consumer_id, ack_type, transaction_id, redelivery_counter, detail, destination, delay),
            )

    def note(self, message_id: str, record: tuple[object, ...]) -> None:
        """:meth:`add` for the per-message hot paths (send, dispatch, ack), which check ``enabled`` first: the record
        is a tuple of :class:`HistoryRecord`'s leading fields (the rest take their defaults when it is read)."""
        records = self.records.get(message_id)
        if records is None:
            self.records[message_id] = [record]
            order = self._order
            order.append(message_id)
            if len(order) > self.limit:
                del self.records[order.popleft()]
        else:
            records.append(record)

    def of(self, message_id: str) -> tuple[HistoryRecord, ...]:
        return tuple(HistoryRecord(*fields) for fields in self.records.get(message_id, ()))  # type: ignore[arg-type]
