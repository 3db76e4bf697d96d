"""The broker's memory of what happened to each message: every send, dispatch, ack (with its type), release,
expiry and dead-lettering, with the time and the consumer. Tests read it to explain a failure."""

from __future__ import annotations

from collections import deque

import attrs

from ..message import Body

__all__ = ["RECORD_WIDTH", "DeadLetterRecord", "History", "HistoryRecord"]


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


#: the fields of one record in :attr:`History.log`: the message id, then :class:`HistoryRecord`'s fields in order
RECORD_WIDTH = 10


class History:
    """What happened to the recent messages: at least the last ``limit`` to have something happen to them (0 turns
    recording off).

    Written as the events happen and assembled only when read (issue 45). An event is
    :data:`RECORD_WIDTH` fields added to the end of one flat list, :attr:`log`: ``(message id, time, event, consumer
    id, ack type, transaction id, redelivery counter, detail, destination, delay)``. The hot paths write it with one
    ``extend``; a record that was a tuple of its own cost an allocation the cyclic collector then visited, and a
    record filed under its message cost a dict lookup and a tuple per event (issue 45).

    Forgetting costs nothing per event either: when the log passes :attr:`cap` fields it is sealed as a block of
    records, with the set of the message ids it names, and the oldest blocks are let go of as soon as the newer ones
    name ``limit`` messages between them. So the history holds a run of the most recent events that names at least
    the last ``limit`` messages; a message whose first events fell out of it keeps the events after them (as a
    message forgotten and heard of again did under the per-message rule before). Reads assemble the run per message
    and show the ``limit`` messages first named most recently (tests/core/test_history_log.py holds it against a
    reference that files every event under its message).
    """

    __slots__ = ("_blocks", "_read", "_read_at", "_sealed", "cap", "enabled", "limit", "log")

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self.enabled = limit > 0
        #: the records since the last seal, flat, :data:`RECORD_WIDTH` fields each. Writers that extend it directly
        #: call :meth:`seal` once its length passes :attr:`cap`, and read it afresh at each write (a seal replaces it)
        self.log: list[object] = []
        #: the log's length, in fields, past which it is sealed: a bound on memory, not on work
        self.cap = max(limit, 256) * RECORD_WIDTH
        #: the sealed blocks of records, oldest first, each with the ids it names
        self._blocks: deque[tuple[list[object], tuple[object, ...]]] = deque()
        self._sealed = 0
        #: the last read's assembly and the (seals, log length) it was made at: a report reads many messages at once
        self._read: dict[str, list[tuple[object, ...]]] = {}
        self._read_at = (-1, -1)

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
            log.extend(
                (
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
                self.seal()

    def seal(self) -> None:
        """Close the log as a block and start a new one; let go of the oldest blocks that the newer ones make
        unneeded (together they name ``limit`` messages). The log itself becomes the block: copying it into a tuple,
        which the cyclic collector would stop visiting, cost more than the visits (issue 45, measured)."""
        block = self.log
        self.log = []
        blocks = self._blocks
        blocks.append((block, tuple(block[::RECORD_WIDTH])))
        self._sealed += 1
        need = self.limit
        named: set[object] = set()
        keep = len(blocks)
        for count, (_, ids) in enumerate(reversed(blocks), 1):
            named.update(ids)
            if len(named) >= need:
                keep = count
                break
        for _ in range(len(blocks) - keep):
            blocks.popleft()

    def _assembled(self) -> dict[str, list[tuple[object, ...]]]:
        """The kept records by message id (HistoryRecord's fields), the ``limit`` messages first named most recently,
        in the order they were first named: assembled once per read after a write."""
        at = (self._sealed, len(self.log))
        if at == self._read_at:
            return self._read
        index: dict[str, list[tuple[object, ...]]] = {}
        width = RECORD_WIDTH
        for block in (*(b for b, _ in self._blocks), self.log):
            for start in range(0, len(block), width):
                message_id: str = block[start]  # type: ignore[assignment]
                records = index.get(message_id)
                if records is None:
                    records = index[message_id] = []
                records.append(tuple(block[start + 1 : start + width]))
        extra = len(index) - self.limit
        if extra > 0:
            for message_id in list(index)[:extra]:
                del index[message_id]
        self._read, self._read_at = index, at
        return index

    def message_ids(self) -> list[str]:
        """The ids of the messages whose records are kept, in the order they were first named."""
        return list(self._assembled())

    def of(self, message_id: str) -> tuple[HistoryRecord, ...]:
        return tuple(HistoryRecord(*fields) for fields in self._assembled().get(message_id, ()))  # type: ignore[arg-type]
