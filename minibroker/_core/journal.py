"""The store journal: what the core asks the message store to do, as data (sans I/O).

The core never touches a disk. When the broker has a message store, the core is given a journal (a plain list) and
appends one operation to it for every change a store must know about, exactly as it appends dispatches to
``output``; the driver drains the journal after each call and applies the whole batch to the store in one
transaction, before any answer of that call (a send receipt, a commit's OK) leaves the broker. Without a store the
journal is None and nothing is recorded.

What is journaled (queues only: topics have no durable subscribers here, and non-persistent messages are never
stored, as in ActiveMQ):

* :class:`Stored`: a persistent message entered a queue (a send, a commit, a dead-letter copy, a scheduled message
  coming due), with its sequence number and redelivery counter;
* :class:`Removed`: it left for good (acked, committed, expired, dead-lettered, cursor-acked);
* :class:`Redelivered`: a consumer released it (closed, dropped, rolled back after closing): its counter now;
* :class:`Purged`: every message of a queue went;
* :class:`Scheduled` / :class:`Unscheduled`: a persistent message waits in the scheduler (delayed delivery, the
  broker redelivery plugin) under a job id, then comes due;
* :class:`DurableSaved` / :class:`DurableDropped`: a durable topic subscription was made or removed, or went away or
  came back (its position in its topic's log, topic_log.py); its messages are journaled as those of its internal
  queue, ``durable://<client id>/<name>``, or, while it reads the log, as the log's (``topic-log://<topic>``);
* :class:`LogShared` / :class:`LogTrimmed`: a restart left part of a topic's log on disk (paging.py), and a
  subscription caught up with it (those rows are its queue's too, which the store hands it a page at a time like any
  paged queue's rows, instead of copying them all at once), or no subscription reads them any more.

The operations of one batch are in the order they happened; a store may cancel a ``Stored`` against a later
``Removed`` of the same ``(queue, seq)`` (a message sent and consumed between two flushes), since sequence numbers
are never reused. Loading what a store kept back into a new core is :meth:`BrokerCore.restore`.
"""

from __future__ import annotations

from typing import Any, NamedTuple, TypeAlias

from ..message import Message

__all__ = [
    "DurableDropped",
    "DurableSaved",
    "Journal",
    "JournalOp",
    "LogShared",
    "LogTrimmed",
    "Purged",
    "Redelivered",
    "Removed",
    "Scheduled",
    "Stored",
    "Unscheduled",
]


class Stored(NamedTuple):
    queue: str
    seq: int
    message: Message
    redelivery_counter: int


class Removed(NamedTuple):
    queue: str
    seq: int


class Redelivered(NamedTuple):
    queue: str
    seq: int
    redelivery_counter: int


class Purged(NamedTuple):
    queue: str


class Scheduled(NamedTuple):
    job: int
    due: float
    message: Message
    redelivery_counter: int


class Unscheduled(NamedTuple):
    job: int


class DurableSaved(NamedTuple):
    """A durable topic subscription was made (or replaced): kept so that it exists after a restart, empty or not."""

    client_id: str
    name: str
    topic: str
    selector: str | None
    no_local: bool
    #: the log sequence number from which its topic's log holds its messages (topic_log.py; saved again each time
    #: it goes away or comes back); None: its messages are all in its own queue
    position: int | None = None


class LogShared(NamedTuple):
    """The rows of topic log ``log`` from log sequence number ``from_seq`` up to ``to_seq`` (the part a restart left
    on disk) are rows of ``queue`` too, a durable subscription's that caught up: row ``seq`` is its ``seq - from_seq +
    first``. The store hands them to it a page at a time (each page then becomes rows of its own, in that read's
    transaction), and the log keeps them until then (topic_log.py ``LogShare``): a catch-up reads the log from its
    position, it copies nothing (issue 41)."""

    log: str
    from_seq: int
    to_seq: int
    queue: str
    first: int


class LogTrimmed(NamedTuple):
    """The rows of topic log ``log`` below ``below_seq`` went: no subscription reads them any more."""

    log: str
    below_seq: int


class DurableDropped(NamedTuple):
    """A durable topic subscription was removed (unsubscribed, or replaced by another topic or selector)."""

    client_id: str
    name: str


JournalOp: TypeAlias = (
    Stored
    | Removed
    | Redelivered
    | Purged
    | Scheduled
    | Unscheduled
    | DurableSaved
    | DurableDropped
    | LogShared
    | LogTrimmed
)

#: the kinds of ``Journal.undo`` records (undo.py): a message stored, a message removed
STORED = 0
REMOVED = 1
#: a persistent message sent to a queue whose older messages are still on disk: written, not kept in memory
ON_DISK = 2
#: a redelivery counter raised (the record keeps the old value), a queue purged (its entries), a job scheduled or
#: taken from the scheduler (the scheduler's item; the record's queue slot holds the core)
COUNTER = 3
PURGED = 4
SCHEDULED = 5
UNSCHEDULED = 6
#: a durable subscription made or dropped (the record's queue slot holds the core, its entry the subscription)
DURABLE_SAVED = 7
DURABLE_DROPPED = 8
#: a message appended to a topic's log, entries let go of below its floor (the record's queue slot holds the log),
#: a durable subscription that began reading the log or stopped (the queue slot holds the core; the holder slot the
#: position it had)
LOGGED = 9
TRIMMED = 10
DEFERRED = 11
CAUGHT_UP = 12
#: a message appended to a paged topic log's part on disk (the record's queue slot holds the log, its entry the seq);
#: seqs of that part let go of (the entry holds them); a log's disk part shared with a queue (the queue slot holds
#: the queue, the entry what it was: on_disk, next_seq, disk_after, whether it was paged; the holder the log and
#: its share); shares dropped by a purge (the queue slot holds the log, the entry the shares)
LOGGED_ON_DISK = 13
DISK_TRIMMED = 14
LOG_SHARED = 15
SHARES_DROPPED = 16


class Journal(list[JournalOp]):
    """The operations of one driver call for the store, and beside them what would take them back in memory
    (``undo``, see undo.py): when the store cannot write the batch, the driver rolls memory back to the disk."""

    __slots__ = ("paged", "undo")

    def __init__(self) -> None:
        super().__init__()
        #: (kind, queue, entry, holder) per Stored and Removed operation, in order (undo.py)
        self.undo: list[tuple[int, Any, Any, Any]] = []
        #: queues restored a page at a time, by name: part of their messages is still only on disk (paging.py)
        self.paged: dict[str, Any] = {}
