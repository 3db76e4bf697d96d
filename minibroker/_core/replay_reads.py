"""The core's replayable reads, for the Spark source: sequence ranges, cursor acks, batch publishes and the epoch
that says whether positions still mean what they meant (the rules are in replay.py).

A part the core owns (``BrokerCore.replay``, made on first use), not a mixin: it needs only the core's queues, clock
and history and a way to send, so it is built and tested with those alone."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from ..message import Destination, Message
from .history import History
from .queue import Queue
from .replay import (
    CursorAck,
    CursorBook,
    EpochSource,
    PublishResult,
    QueuePosition,
    RangeEntry,
    ack_below,
    check_epoch,
    positions,
    publish,
    random_epoch,
    read_range,
    select_range,
)
from .subscription import QueueEntry

__all__ = ["ReplayableReads"]


class _Clock(Protocol):
    def now(self) -> float: ...


class ReplayableReads:
    """Reads by sequence number that leave the queue as it was, and acks below a position, tied to no consumer."""

    __slots__ = ("_cursor_book", "clock", "history", "queues", "send")

    def __init__(
        self,
        queues: dict[str, Queue],
        clock: _Clock,
        history: History,
        send: Callable[[int, Message], None],
    ) -> None:
        self.queues = queues
        self.clock = clock
        self.history = history
        #: the core's send, for batch publishes: (connection id, message)
        self.send = send
        #: created on first use (``cursors()``); a restarted broker builds a new core, hence a new epoch
        self._cursor_book: CursorBook | None = None

    def cursors(self, epoch_source: EpochSource | None = None) -> CursorBook:
        """The cursor state of this broker state, created on first use with an epoch from ``epoch_source``
        (default: random). Later calls return the same book, whatever they pass."""
        book = self._cursor_book
        if book is None:
            book = self._cursor_book = CursorBook((epoch_source or random_epoch)())
        return book

    @property
    def epoch(self) -> str:
        return self.cursors().epoch

    def queue_positions(
        self, names: Iterable[str] | None = None, cursor: str | None = None
    ) -> tuple[QueuePosition, ...]:
        """The positions of the queues named (None: every queue, by name)."""
        return positions(self.cursors(), self.queues, names, cursor)

    def read_range(
        self,
        name: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        limit: int | None = None,
        epoch: str | None = None,
    ) -> list[RangeEntry]:
        """The messages of queue ``name`` not yet acked with ``from_seq <= seq < to_seq``, oldest first, as
        ``(seq, message, redelivery_counter)``; non-destructive (see :func:`replay.read_range`). ``epoch``: raise
        :class:`~minibroker.errors.StaleEpoch` unless it is the broker's."""
        check_epoch(self.cursors(), epoch)
        return read_range(self.queues.get(name), from_seq, to_seq, limit, self.clock.now())

    def select_range(
        self,
        name: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        limit: int | None = None,
        epoch: str | None = None,
    ) -> list[QueueEntry]:
        """What :meth:`read_range` reads, as the queue's own entries (for columnar readers: read, never change)."""
        check_epoch(self.cursors(), epoch)
        return select_range(self.queues.get(name), from_seq, to_seq, limit, self.clock.now())

    def ack_below(self, name: str, cursor: str, seq: int, epoch: str | None = None) -> CursorAck:
        """Consume every message of queue ``name`` with a sequence number below ``seq``, for cursor ``cursor``;
        cumulative and idempotent, tied to no connection. Messages dispatched to a consumer and not acked are left
        to it (counted in ``skipped``; removed by a later cursor ack if released): see :mod:`replay`."""
        book = self.cursors()
        check_epoch(book, epoch)
        return ack_below(book, self.queues.get(name), name, cursor, seq, self.history, self.clock.now())

    def enable_duplicate_check(self, destination: Destination, window: int | None = None) -> None:
        """Switch on the publish path's duplicate check for ``destination`` (``window`` ids remembered)."""
        self.cursors().duplicate_filter(str(destination), window)

    def publish(self, connection_id: int, messages: Iterable[Message], dedupe: bool = False) -> PublishResult:
        """Send a batch of messages outside any transaction. With ``dedupe``, a message whose id its destination has
        seen on this path before (within the window) is dropped, and the destination's check is switched on."""
        return publish(
            self.cursors(),
            messages,
            dedupe,
            lambda message: self.send(connection_id, message),
            self.history,
            self.clock.now(),
        )
