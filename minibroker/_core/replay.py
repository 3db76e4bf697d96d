"""Replayable reads for stream processors (Spark and the like), sans I/O.

A stream processor that keeps its own checkpoint (as Spark does) does not want JMS consumers: it wants to read a
queue as a log, by position, as many times as it needs, and to tell the broker afterwards "everything below this
position is done". This module holds that logic for the broker core:

* **Sequence numbers.** Every queue numbers its messages 0, 1, 2... in send order (``QueueEntry.seq``, per
  destination, never reused while the broker runs). A :class:`QueuePosition` says where a queue stands: the lowest
  sequence still held (``first_seq``) and the one the next message will get (``next_seq``).
* **Range reads** (:func:`read_range`): the messages not yet acked with ``from_seq <= seq < to_seq``, in sequence
  order, with their redelivery counters. Non-destructive: no dispatch, no counter raised, nothing removed, so the same
  range can be read again after a crash. In-flight messages (dispatched to a consumer, not acked) are included, as
  in a queue browser; expired messages are not.
* **Cursor acks** (:func:`ack_below`): "consume every message of queue Q with ``seq < N``", on behalf of a named cursor,
  independent of any connection or consumer. Cumulative and idempotent: acking below N twice is acking once, and
  acking below a lower number later changes nothing. The cursor's *floor* (the highest N acked) is remembered.
* **The epoch**: an id drawn when the broker's state is created. A broker in memory loses every message on a restart
  and starts the sequence numbers again at 0, so offsets from before the restart would silently point at other
  messages: its epoch changes. A broker with a store keeps its messages and sequence numbers, and its epoch (kept in
  the store). Every answer carries the epoch, and requests may name the epoch they expect: a mismatch raises
  :class:`~minibroker.errors.StaleEpoch`.
* **Duplicate check** (:class:`DuplicateFilter`): an opt-in, per-destination filter keyed by message id, applied by
  the batch publish path (``publish(messages, dedupe=True)``), so that a writer which re-sends a batch under the same
  ids after a failure (a retried Spark task) does not create duplicates. It remembers the last ``window`` ids of the
  destination. Plain ``send()`` is neither checked nor recorded, as the broker's hot path stays as it is (ActiveMQ's
  producer audit, which this resembles, works on producer sequence numbers per producer instead).

Messages held by a consumer
---------------------------
A cursor ack covering a message that is currently dispatched to an ordinary consumer (in its prefetch buffer or
being processed, not acked; or acked inside a still open transaction) **leaves that message to its consumer**: it is
not removed, and the consumer is told nothing. ActiveMQ never takes an in-flight message back from a live consumer
(only an administrator's purge does, and then the consumer's ack fails with "Unmatched acknowledge"); removing it
would make the consumer's normal ack fail the same way. The consumer's ack removes it as usual. If the consumer
releases it instead (closes without acking), it becomes pending again, and the next cursor ack that covers its
sequence number removes it. ``CursorAck.skipped`` counts the messages left this way.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import attrs

from ..errors import InvalidAcknowledge, InvalidConfiguration, MinibrokerError, PublishInterrupted, StaleEpoch
from ..message import Message
from .history import History
from .queue import Queue
from .subscription import QueueEntry

__all__ = [
    "DEFAULT_DUPLICATE_WINDOW",
    "BrokerInfo",
    "CursorAck",
    "CursorBook",
    "DuplicateFilter",
    "EpochSource",
    "PublishResult",
    "QueuePosition",
    "RangeEntry",
    "RangeRead",
    "ack_below",
    "check_epoch",
    "positions",
    "publish",
    "queue_position",
    "random_epoch",
    "read_range",
    "select_range",
]

#: makes the epoch of a new broker state (``Broker.epoch_source``); must return a new value on every call
EpochSource = Callable[[], str]

#: how many message ids a destination's duplicate filter remembers by default
DEFAULT_DUPLICATE_WINDOW = 500_000


def random_epoch() -> str:
    """A fresh random epoch: 16 hex digits."""
    return os.urandom(8).hex()


class RangeEntry(NamedTuple):
    """One message of a range read: its sequence number, the message, and the broker's redelivery counter."""

    seq: int
    message: Message
    redelivery_counter: int


@attrs.frozen(slots=True)
class RangeRead:
    """The answer to a range read: the entries (also by iterating it), the broker's epoch and the queue's
    ``next_seq`` when it was read."""

    epoch: str
    queue: str
    next_seq: int
    entries: tuple[RangeEntry, ...]

    def __iter__(self) -> Iterator[RangeEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


@attrs.frozen(slots=True)
class QueuePosition:
    """Where a queue stands: ``first_seq`` is the lowest sequence number still held (``next_seq`` when empty),
    ``next_seq`` the one the next message gets, ``size`` the messages held. ``cursor_floor``: what the cursor named in
    the request has acked below (None: that cursor never acked this queue, or no cursor was named)."""

    queue: str
    first_seq: int
    next_seq: int
    size: int
    cursor_floor: int | None = None

    @property
    def latest_seq(self) -> int:
        """The sequence number of the newest message ever sent to the queue (-1: none yet)."""
        return self.next_seq - 1


@attrs.frozen(slots=True)
class BrokerInfo:
    """The broker's epoch and name, and the position of the queues asked for."""

    epoch: str
    name: str
    queues: tuple[QueuePosition, ...]

    def position(self, queue: str) -> QueuePosition | None:
        for p in self.queues:
            if p.queue == queue:
                return p
        return None


@attrs.frozen(slots=True)
class CursorAck:
    """The result of a cursor ack: the cursor's floor now, how many messages this call removed, how many it left to
    the consumers holding them (see the module notes), and the queue's ``next_seq``."""

    epoch: str
    queue: str
    cursor: str
    floor: int
    removed: int
    skipped: int
    next_seq: int


@attrs.frozen(slots=True)
class PublishResult:
    """A batch publish: how many messages the broker took, and how many it dropped as duplicates."""

    accepted: int
    duplicates: int


class DuplicateFilter:
    """The last ``window`` message ids seen by one destination's publish path, oldest forgotten first."""

    __slots__ = ("_ids", "window")

    def __init__(self, window: int = DEFAULT_DUPLICATE_WINDOW) -> None:
        if window < 1:
            raise InvalidConfiguration(f"a duplicate window holds at least 1 id, not {window}", window=window)
        self.window = window
        self._ids: OrderedDict[str, None] = OrderedDict()  # popitem(last=False) drops the oldest in O(1)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids

    def check_and_add(self, message_id: str) -> bool:
        """True if ``message_id`` was seen already (a duplicate); otherwise remember it and return False."""
        ids = self._ids
        if message_id in ids:
            return True
        ids[message_id] = None
        if len(ids) > self.window:
            ids.popitem(last=False)
        return False


class CursorBook:
    """The cursor state of one broker state (one epoch): cursor floors, duplicate filters, the publish fault."""

    __slots__ = ("duplicate_filters", "epoch", "fail_publish", "floors")

    def __init__(self, epoch: str) -> None:
        if not isinstance(epoch, str) or not epoch:
            raise InvalidConfiguration(f"a broker epoch is a non-empty string, not {epoch!r}", epoch=epoch)
        self.epoch = epoch
        #: (queue, cursor) -> the highest sequence number the cursor acked below
        self.floors: dict[tuple[str, str], int] = {}
        #: destination (``str(Destination)``) -> its duplicate filter, once switched on
        self.duplicate_filters: dict[str, DuplicateFilter] = {}
        #: fault injection: (messages to accept, error) for the next publish
        self.fail_publish: tuple[int, Exception] | None = None

    def duplicate_filter(self, destination: str, window: int | None = None) -> DuplicateFilter:
        """The destination's filter, switched on now if it was not (``window``: its size; None keeps/defaults)."""
        f = self.duplicate_filters.get(destination)
        if f is None:
            f = self.duplicate_filters[destination] = DuplicateFilter(window or DEFAULT_DUPLICATE_WINDOW)
        elif window is not None and window != f.window:
            if window < 1:
                raise InvalidConfiguration(f"a duplicate window holds at least 1 id, not {window}", window=window)
            f.window = window
        return f


def check_epoch(book: CursorBook, expected: str | None) -> None:
    """Raise :class:`StaleEpoch` when the caller expects another epoch (None: the caller does not check)."""
    if expected is not None and expected != book.epoch:
        raise StaleEpoch(
            f"the broker's epoch is {book.epoch}, not {expected}: it was restarted and the offsets taken before "
            "belong to messages that are gone",
            expected=expected,
            actual=book.epoch,
        )


def queue_position(q: Queue | None, name: str, cursor_floor: int | None = None) -> QueuePosition:
    if q is None:
        return QueuePosition(name, 0, 0, 0, cursor_floor)
    entries = q.entries
    # entries are keyed by sequence number and only ever inserted in that order: the first key is the lowest
    first = next(iter(entries), q.next_seq) if entries else q.next_seq
    return QueuePosition(name, first, q.next_seq, len(entries), cursor_floor)


def _check_range(from_seq: int, to_seq: int | None, limit: int | None) -> None:
    if from_seq < 0:
        raise InvalidConfiguration(f"from_seq must be >= 0, not {from_seq}", from_seq=from_seq)
    if to_seq is not None and to_seq < from_seq:
        raise InvalidConfiguration(
            f"to_seq ({to_seq}) is below from_seq ({from_seq})", from_seq=from_seq, to_seq=to_seq
        )
    if limit is not None and limit < 0:
        raise InvalidConfiguration(f"limit must be >= 0, not {limit}", limit=limit)


def select_range(q: Queue | None, from_seq: int, to_seq: int | None, limit: int | None, now: float) -> list[QueueEntry]:
    """The queue entries :func:`read_range` reads (the entries themselves: no new object per message, for columnar
    readers). Changes nothing."""
    _check_range(from_seq, to_seq, limit)
    if q is None or limit == 0:
        return []
    entries = q.entries
    stop = q.next_seq if to_seq is None else min(to_seq, q.next_seq)
    if stop <= from_seq or not entries:
        return []
    out: list[QueueEntry] = []
    if stop - from_seq <= 2 * len(entries):
        # dense enough: look the sequence numbers up, a window at a time (at most ``limit`` numbers can hold the
        # ``limit`` messages still wanted)
        get = entries.get
        pos = from_seq
        while pos < stop and (limit is None or len(out) < limit):
            end = stop if limit is None else min(stop, pos + limit - len(out))
            out.extend(
                e
                for e in filter(None, map(get, range(pos, end)))
                if not ((m := e.message).expiration and now >= m.expiration)
            )
            pos = end
    else:
        # sparse (most of the range already acked): walk what is held, in sequence order
        for seq, entry in entries.items():
            if seq >= stop or (limit is not None and len(out) >= limit):
                break
            m = entry.message
            if seq >= from_seq and not (m.expiration and now >= m.expiration):
                out.append(entry)
    return out


def read_range(q: Queue | None, from_seq: int, to_seq: int | None, limit: int | None, now: float) -> list[RangeEntry]:
    """The messages of ``q`` not yet acked with ``from_seq <= seq < to_seq`` (None: up to the newest), oldest first,
    at most ``limit`` (None: all). Expired messages are left out. Changes nothing."""
    new = tuple.__new__
    return [
        new(RangeEntry, (e.seq, e.message, e.redelivery_counter)) for e in select_range(q, from_seq, to_seq, limit, now)
    ]


def ack_below(
    book: CursorBook,
    q: Queue | None,
    queue: str,
    cursor: str,
    seq: int,
    history: History,
    now: float,
) -> CursorAck:
    """Consume every message of ``q`` with a sequence number below ``seq`` for ``cursor`` (see the module notes for
    messages held by consumers), recording each in ``history``."""
    if not isinstance(cursor, str) or not cursor:
        raise InvalidConfiguration(f"a cursor name is a non-empty string, not {cursor!r}", cursor=cursor)
    next_seq = 0 if q is None else q.next_seq
    if seq < 0 or seq > next_seq:
        raise InvalidAcknowledge(
            f"cursor {cursor!r} cannot ack below {seq} on queue {queue!r}: its sequence numbers run from 0 to "
            f"{next_seq} (was the broker restarted?)",
            queue=queue,
            cursor=cursor,
            seq=seq,
            next_seq=next_seq,
        )
    key = (queue, cursor)
    floor = max(book.floors.get(key, 0), seq)
    book.floors[key] = floor
    if q is None:
        return CursorAck(book.epoch, queue, cursor, floor, 0, 0, next_seq)
    doomed: list[QueueEntry] = []
    skipped = 0
    for s, entry in q.entries.items():
        if s >= floor:
            break
        if entry.holder is not None or entry.acked_in_txn is not None:
            skipped += 1
        else:
            doomed.append(entry)
    if doomed:
        q.drop(doomed)
        if history.enabled:
            for entry in doomed:
                history.add(
                    entry.message.message_id,
                    now,
                    "ack",
                    None,
                    "CURSOR",
                    None,
                    entry.redelivery_counter,
                    f"cursor {cursor} below {seq}",
                )
    return CursorAck(book.epoch, queue, cursor, floor, len(doomed), skipped, next_seq)


def publish(
    book: CursorBook,
    messages: Iterable[Message],
    dedupe: bool,
    send: Callable[[Message], None],
    history: History,
    now: float,
) -> PublishResult:
    """Hand each message to ``send`` but those the destination's duplicate filter has seen (see the module notes);
    with ``dedupe`` the filter is switched on first. ``book.fail_publish`` (fault injection) stops the batch."""
    accepted = duplicates = 0
    fault = book.fail_publish
    for message in messages:
        if fault is not None and accepted >= fault[0]:
            book.fail_publish = None
            raise fault[1]
        if dedupe or book.duplicate_filters:
            key = str(message.destination)
            f = book.duplicate_filter(key) if dedupe else book.duplicate_filters.get(key)
            if f is not None and f.check_and_add(message.message_id):
                duplicates += 1
                history.add(
                    message.message_id, now, "dropped", detail="duplicate message id (publish)", destination=key
                )
                continue
        try:
            send(message)
        except MinibrokerError as exc:
            raise PublishInterrupted(
                f"the batch publish took {accepted} message(s) ({duplicates} duplicate(s) dropped), then stopped: "
                f"{exc.message or exc}",
                accepted=accepted,
                duplicates=duplicates,
                cause=exc.code,
            ) from exc
        accepted += 1
    if fault is not None and accepted >= fault[0]:
        book.fail_publish = None
        raise fault[1]
    return PublishResult(accepted, duplicates)


def positions(
    book: CursorBook, queues: dict[str, Queue], names: Iterable[str] | None, cursor: str | None
) -> tuple[QueuePosition, ...]:
    """The positions of ``names`` (None: every queue, by name); with ``cursor``, that cursor's floor on each."""
    wanted = sorted(queues) if names is None else list(names)
    out = []
    for name in wanted:
        floor = None if cursor is None else book.floors.get((name, cursor))
        out.append(queue_position(queues.get(name), name, floor))
    return tuple(out)
