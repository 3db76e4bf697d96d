"""A topic's one copy of what its offline durable subscriptions have not had yet (issue 31: stored once).

ActiveMQ's KahaDB keeps a topic message once and, per durable subscription, how far it has read. So does this: while
a durable subscription reads all of a topic (no selector, no ``noLocal``, no wildcard) and has no subscriber, its
topic does not copy each message into the subscription's queue. It appends the message once to its log, and the
subscription keeps only its position there (``DurableSubscription.behind``: the log sequence number from which the
messages are its). When something needs the subscription's messages (a subscriber comes back, a browse, a purge, a
range read, an expiry sweep), they are copied into its queue at once, numbered as the topic numbered them, and from
then on it is fed as before. A publish to a topic with a thousand offline subscriptions is one append, one stored
row, whatever their number.

The log keeps an entry while some subscription's position is at or before it: the subscriptions wait in the order
they went away (their positions only grow that way), so the first one's position is the floor, and what lies below it
is let go of (:meth:`TopicLog.below_floor`). The store keeps the log as the rows of an internal queue
(:func:`log_name`), and each subscription's position beside it (``DurableSaved.position``).

A restart loads a log as it loads a queue, a page at a time (paging.py): the oldest page in memory, and of the rest
only the sequence numbers (``TopicLog.disk``); new persistent messages then go to disk behind them. The log itself
is never paged in: a subscription that catches up gets what memory holds as copies, and shares the rows on disk with
its queue (``LogShared``, a :class:`LogShare`): the store hands them to the queue a page at a time as its consumer
takes them, and the log keeps them until then. A catch-up copies nothing on disk (issue 41: a copy of a large log in
one transaction doubled the data directory, and could not be made at all with less free disk than the log's size).
Non-persistent messages
(never stored) stay in memory, and reach such a subscription before the older persistent ones still on disk, as
ActiveMQ's durable cursor keeps them in a cursor of their own.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from ..message import Message

if TYPE_CHECKING:
    from .durable import DurableSubscription

__all__ = ["LOG_PREFIX", "LogEntry", "LogShare", "TopicLog", "log_name"]

#: the prefix of the store's name for a topic's log (no client can spell it: ``Destination.parse`` refuses ``://``)
LOG_PREFIX = "topic-log://"


def log_name(topic: str) -> str:
    """The name the store keeps topic ``topic``'s log under."""
    return f"{LOG_PREFIX}{topic}"


@attrs.define(slots=True, eq=False)
class LogEntry:
    """A message in the log: its log sequence number, the broker sequence id the topic gave it, the bytes it holds."""

    seq: int
    broker_seq: int
    message: Message
    size: int


@attrs.define(slots=True, eq=False)
class LogShare:
    """Rows of the log on disk (``from_seq`` up to ``to_seq``) that are rows of ``queue`` too, from its ``first``
    on: a durable subscription's that caught up while they were on disk. The store hands them to the queue a page at
    a time; each page handed moves the share on (:meth:`TopicLog.handed`), and the log keeps what is left."""

    queue: str
    from_seq: int
    to_seq: int
    first: int
    #: how many rows of the log it still shares (the range may hold seqs of messages never stored)
    rows: int


class TopicLog:
    """The messages published to one topic while some of its durable subscriptions are away, in publish order."""

    __slots__ = ("disk", "entries", "expiring", "head", "name", "next_seq", "shares", "waiting")

    def __init__(self, topic: str) -> None:
        self.name = log_name(topic)
        #: ``entries[head:]`` are the live ones, seq ascending (the head advances as the floor rises; compacted)
        self.entries: list[LogEntry] = []
        self.head = 0
        self.next_seq = 0
        #: the subscriptions reading the log, each with its position, in the order their positions grow
        self.waiting: dict[DurableSubscription, int] = {}
        #: live entries with an expiration (an expiry sweep then looks at the log)
        self.expiring = 0
        #: the sequence numbers of the persistent messages only on disk (a restart's paging), ascending; each is
        #: after every persistent entry in memory
        self.disk: array[int] = array("q")
        #: the parts on disk that durable subscription queues read from here (a catch-up's; few)
        self.shares: list[LogShare] = []

    def __len__(self) -> int:
        return len(self.entries) - self.head + len(self.disk)

    def append(self, message: Message, broker_seq: int) -> LogEntry | int:
        """The new entry; or, for a persistent message while older ones are only on disk, its sequence number
        (the message goes to disk behind them, not into memory)."""
        seq = self.next_seq
        self.next_seq = seq + 1
        if self.disk and message.persistent:
            self.disk.append(seq)
            return seq
        entry = LogEntry(seq, broker_seq, message, message.size_estimate())
        self.entries.append(entry)
        if message.expiration:
            self.expiring += 1
        return entry

    def restore(self, seq: int, broker_seq: int, message: Message) -> LogEntry:
        """Put back an entry loaded from the store (in seq order)."""
        entry = LogEntry(seq, broker_seq, message, message.size_estimate())
        self.entries.append(entry)
        self.next_seq = max(self.next_seq, seq + 1)
        if message.expiration:
            self.expiring += 1
        return entry

    def _index(self, position: int) -> int:
        return bisect.bisect_left(self.entries, position, lo=self.head, key=lambda e: e.seq)

    def since(self, position: int) -> list[LogEntry]:
        """The live entries from log sequence number ``position`` on."""
        return self.entries[self._index(position) :]

    def count_since(self, position: int) -> int:
        return len(self.entries) - self._index(position) + len(self.disk) - bisect.bisect_left(self.disk, position)

    def disk_since(self, position: int) -> array[int]:
        """The sequence numbers on disk from ``position`` on."""
        return self.disk[bisect.bisect_left(self.disk, position) :]

    def wait(self, durable: DurableSubscription, position: int) -> None:
        """``durable`` reads the log from ``position`` on (its place among the waiting ones kept in position order)."""
        waiting = self.waiting
        if waiting and position < next(reversed(waiting.values())):
            ordered = sorted([*waiting.items(), (durable, position)], key=lambda item: item[1])
            waiting.clear()
            waiting.update(ordered)
        else:
            waiting[durable] = position

    def floor(self) -> int:
        """The lowest sequence number a waiting subscription or a share reads (``next_seq`` when none does)."""
        floor = next(iter(self.waiting.values())) if self.waiting else self.next_seq
        for share in self.shares:
            floor = min(floor, share.from_seq)
        return floor

    def handed(self, queue: str, seqs: Sequence[int]) -> bool:
        """The store handed ``queue`` its rows ``seqs`` (ascending): each share they fall in moves on past them, and
        goes once nothing is left, as the store's did; whether any did (the floor may have risen)."""
        moved = False
        for share in [s for s in self.shares if s.queue == queue]:
            end = share.first + share.to_seq - share.from_seq
            inside = [seq for seq in seqs if share.first <= seq < end]
            if not inside:
                continue
            taken = inside[-1] - share.first + 1
            share.from_seq += taken
            share.first += taken
            share.rows -= len(inside)
            if share.rows <= 0 or share.from_seq >= share.to_seq:
                self.shares.remove(share)
            moved = True
        return moved

    def disk_below_floor(self) -> array[int]:
        """Take out the sequence numbers on disk that no waiting subscription needs any more."""
        cut = bisect.bisect_left(self.disk, self.floor())
        gone = self.disk[:cut]
        if cut:
            del self.disk[:cut]
        return gone

    def below_floor(self) -> list[LogEntry]:
        """Take out the entries no waiting subscription needs any more (all of them when none waits), oldest first."""
        cut = self._index(self.floor())
        gone = self.entries[self.head : cut]
        if gone:
            self.head = cut
            self.expiring -= sum(1 for e in gone if e.message.expiration)
            if self.head > 64 and self.head * 2 > len(self.entries):
                del self.entries[: self.head]
                self.head = 0
        return gone

    def put_back(self, gone: list[LogEntry]) -> None:
        """Take back :meth:`below_floor` (undo.py): those entries are live again, at the head."""
        if not gone:
            return
        self.entries = [*gone, *self.entries[self.head :]]
        self.head = 0
        self.expiring += sum(1 for e in gone if e.message.expiration)

    def take_back(self, entry: LogEntry) -> None:
        """Take back :meth:`append` (undo.py): the entry was never published."""
        if self.entries and self.entries[-1] is entry:
            self.entries.pop()
            if entry.message.expiration:
                self.expiring -= 1
