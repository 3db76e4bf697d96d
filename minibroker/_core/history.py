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
    """What happened to the most recent ``limit`` messages (0 turns recording off).

    Filed as one flat record per event, ``(message id, time, event, consumer id, ...)`` (:class:`HistoryRecord`'s
    fields after the id; trailing defaults may be left out), appended to :attr:`log`: one append on the per-message
    paths, where a record per message kept in a dict of lists cost a lookup, and for a new message a list, a dict
    entry and an eviction (issue 34). A message's records are assembled when they are read (:meth:`of`).

    The log holds only the records filed since the last :meth:`compact` (when it outgrows :attr:`cap`, or at a read):
    compaction files them under their messages in :attr:`_index`, each record once, and forgets the oldest messages
    past ``limit`` by the rule the dict of lists followed, so a read sees exactly what it saw
    (tests/core/test_history_log.py holds the two side by side). Replaying the whole log at every compaction, as
    before issue 45, filed each record about twice more and rebuilt the log; and a message's records are kept as a
    tuple, not a list, so that the cyclic collector leaves them alone (issue 45).
    """

    __slots__ = ("_index", "_order", "cap", "enabled", "limit", "log")

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self.enabled = limit > 0
        #: the records filed since the last compaction, oldest first; writers that append here directly call
        #: :meth:`compact` past :attr:`cap`
        self.log: list[tuple[object, ...]] = []
        #: the log's length past which it is compacted: a bound on memory, not on work (each record is filed once)
        self.cap = max(limit, 256)
        #: the records of the kept messages, by message id, as of the last compaction: a tuple per message, built
        #: again at each record (tuples of plain values are left alone by the cyclic collector; lists are not)
        self._index: dict[str, tuple[tuple[object, ...], ...]] = {}
        #: the kept message ids, the order the history took them in (the index's own order; a deque pops its head
        #: in O(1), where a dict's first key is found past every key deleted before it)
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
            log = self.log
            log.append(
                (message_id, time, event, consumer_id, ack_type, transaction_id, redelivery_counter, detail)
                if destination is None and delay is None
                else (
                    message_id,
                    time,
                    event,
                    consumer_id,
                    ack_type,
                    transaction_id,
                    redelivery_counter,
                    detail,
                    destination,
                    delay,
                )
            )
            if len(log) > self.cap:
                self.compact()

    def compact(self) -> None:
        """File the log's records under their messages and empty it. The rule is the one a record per message
        kept in a dict followed: a message's first record (or its first after it was forgotten) makes it the
        newest, and forgets the oldest past ``limit``."""
        log, limit, index, order = self.log, self.limit, self._index, self._order
        get = index.get
        for record in log:
            message_id: str = record[0]  # type: ignore[assignment]
            records = get(message_id)
            if records is None:
                index[message_id] = (record,)
                order.append(message_id)
                if len(order) > limit:
                    del index[order.popleft()]
            else:
                index[message_id] = (*records, record)
        log.clear()

    def message_ids(self) -> list[str]:
        """The ids of the messages whose records are kept, in the order the history took them in."""
        if self.log:
            self.compact()
        return list(self._order)

    def of(self, message_id: str) -> tuple[HistoryRecord, ...]:
        if self.log:
            self.compact()
        return tuple(HistoryRecord(*record[1:]) for record in self._index.get(message_id, ()))  # type: ignore[arg-type]
