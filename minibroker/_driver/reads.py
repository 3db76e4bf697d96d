"""The broker's replayable reads, for the Spark source and batch writers: sequence ranges, cursor acks, batch
publishes and the epoch (the rules are the core's, minibroker._core.replay). A part of :class:`~minibroker.Broker`;
connections reach it through :class:`~minibroker.BrokerConnection`, which authorizes first."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import ConnectionClosed
from ..message import Destination

if TYPE_CHECKING:  # the replay rules (minibroker._core.replay) load with the first replayable read (issue 45)
    from .._core.broker import BrokerCore
    from .._core.journal import Journal
    from .._core.replay import BrokerInfo, CursorAck, CursorBook, EpochSource, PublishResult, RangeRead
    from .._core.subscription import QueueEntry
    from ..message import Message

__all__: list[str] = []


class _ReplayableReads:
    """Reads by sequence number, cursor acks and batch publishes of :class:`~minibroker.Broker` (documented with
    it)."""

    if TYPE_CHECKING:
        core: BrokerCore
        name: str
        _journal: Journal | None

        def _check_open(self) -> None: ...

        def _flush(self) -> None: ...

        def _load_whole(self, queue: str) -> None: ...

    #: makes the epoch of each broker state: drawn at the first cursor call, and again after :meth:`restart` (which
    #: starts a new state). Must return a new value on every call; None: random (16 hex digits). Set it before use.
    epoch_source: EpochSource | None = None

    def _ranges_of(self, queue: str) -> CursorBook:
        """The cursor book, with every message of ``queue`` in memory (a range spans what paging left on disk)."""
        book = self.core.replay.cursors(self.epoch_source)
        self.core.catch_up_queue(queue)  # a durable subscription away: its messages from its topic's log first
        if self._journal is not None and queue in self._journal.paged:
            self._load_whole(queue)
        return book

    def _next_seq(self, queue: str) -> int:
        q = self.core.queues.get(queue)
        return 0 if q is None else q.next_seq

    @property
    def epoch(self) -> str:
        """This broker state's epoch: it changes on :meth:`restart` when every message and sequence number is lost
        (no store); with a store, which keeps them, it stays the same."""
        return self.core.replay.cursors(self.epoch_source).epoch

    def broker_info(self, queues: Iterable[str] | None = None, cursor: str | None = None) -> BrokerInfo:
        """The epoch, the name, and the positions of ``queues`` (None: every queue), with ``cursor``'s floors."""
        self.core.replay.cursors(self.epoch_source)
        # a durable subscription's queue named here gets what its topic's log holds for it first; a listing of
        # every queue does not copy them all (a reader that reads one names it, and it catches up then)
        if queues is not None:
            queues = list(queues)  # read twice: here and for the positions
            for name in queues:
                self.core.catch_up_queue(name)
        from .._core.replay import BrokerInfo

        return BrokerInfo(self.epoch, self.name, self.core.replay.queue_positions(queues, cursor))

    def read_range(
        self,
        queue: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        limit: int | None = None,
        epoch: str | None = None,
    ) -> RangeRead:
        """The messages of ``queue`` not yet acked with ``from_seq <= seq < to_seq`` (None: all), oldest first, at
        most ``limit``, without consuming them; ``epoch`` (optional) must be the broker's."""
        book = self._ranges_of(queue)
        entries = self.core.replay.read_range(queue, from_seq, to_seq, limit, epoch)
        from .._core.replay import RangeRead

        return RangeRead(book.epoch, queue, self._next_seq(queue), tuple(entries))

    def select_range(
        self,
        queue: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        limit: int | None = None,
        epoch: str | None = None,
    ) -> tuple[str, int, list[QueueEntry]]:
        """What :meth:`read_range` reads as ``(epoch, next_seq, entries)``, the entries being the queue's own (for
        columnar writers, which copy them out at once: read, never change, never keep)."""
        book = self._ranges_of(queue)
        entries = self.core.replay.select_range(queue, from_seq, to_seq, limit, epoch)
        return book.epoch, self._next_seq(queue), entries

    def ack_below(self, queue: str, cursor: str, seq: int, epoch: str | None = None) -> CursorAck:
        """Consume every message of ``queue`` with a sequence number below ``seq`` on behalf of cursor ``cursor``
        (cumulative, idempotent, tied to no connection; messages held by consumers are left to them)."""
        self._ranges_of(queue)
        result = self.core.replay.ack_below(queue, cursor, seq, epoch)
        self._flush()
        return result

    def publish(self, messages: Iterable[Message], dedupe: bool = False) -> PublishResult:
        """Send a batch of messages (outside transactions) as an operator (unchecked; a connection's goes through
        :meth:`BrokerConnection.publish`); ``dedupe`` drops ids the destination saw on this path before (its
        duplicate check, switched on by the first such publish)."""
        return self._publish(0, messages, dedupe)

    def _publish(self, connection_id: int, messages: Iterable[Message], dedupe: bool) -> PublishResult:
        self._check_open()
        self.core.replay.cursors(self.epoch_source)
        try:
            return self.core.replay.publish(connection_id, messages, dedupe)
        finally:
            self._flush()

    def enable_duplicate_check(self, queue: str | Destination, window: int | None = None) -> None:
        """Drop batch-published messages whose id ``queue`` has seen (its last ``window`` ids, default 500,000)."""
        self.core.replay.cursors(self.epoch_source)
        self.core.replay.enable_duplicate_check(Destination.parse(queue), window)

    def fail_next_publish(self, after: int = 0, error: Exception | None = None) -> None:
        """Fault injection: the next batch publish takes ``after`` messages, then fails with ``error`` (by default
        :class:`~minibroker.errors.ConnectionClosed`), as a connection lost in the middle of a batch."""
        self.core.replay.cursors(self.epoch_source).fail_publish = (
            after,
            error or ConnectionClosed("the batch publish failed (injected fault)"),
        )
