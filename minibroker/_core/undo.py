"""Taking back in memory what the store could not write (issue 15, item 6).

The core changes memory first and journals each change for the store (journal.py); the driver writes one call's
batch after the call. When that write fails (a full disk), the call fails as a whole, as in ActiveMQ, where the
store is written before the broker's memory changes: a send the client is told failed must not be delivered, and an
ack the disk never saw must not be forgotten in memory (the next restart would bring the message back). So each
journaled change is logged with what takes it back (``Journal.undo``), and :func:`roll_back` replays the log
backwards: a stored message leaves its queue (and the dispatch of it not yet routed), a removed one returns to the
consumer that held it (or to the head of its queue), a raised redelivery counter is lowered again, a purged queue
gets its messages back, a scheduled job leaves the scheduler and a job taken from it returns, a durable
subscription made goes (with its subscriber) and one dropped comes back; a message appended to a topic's log leaves
it and entries let go of come back, and a durable subscription that began or stopped reading the log stops or
begins again (its copies, journaled as stored, leave its queue by their own records).
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from .journal import (
    CAUGHT_UP,
    COUNTER,
    DEFERRED,
    DISK_TRIMMED,
    DURABLE_DROPPED,
    DURABLE_SAVED,
    LOG_SHARED,
    LOGGED,
    LOGGED_ON_DISK,
    ON_DISK,
    PURGED,
    SCHEDULED,
    SHARES_DROPPED,
    STORED,
    TRIMMED,
    UNSCHEDULED,
)

if TYPE_CHECKING:
    from .dead_letter import DeadLetters
    from .effects import Dispatch
    from .queue import Queue
    from .subscription import QueueEntry, Subscription

__all__ = ["roll_back"]


def roll_back(
    records: list[tuple[int, Any, Any, Any]], output: list[Dispatch], dead_letters: DeadLetters | None = None
) -> int:
    """Take back ``records`` (``Journal.undo``), newest first, and drop the dispatches of the messages whose store
    was taken back from ``output``; a dead-letter copy taken back may be made again (``dead_letters`` forgets it).
    The number of operations taken back."""
    unsent: set[tuple[int, int]] = set()  # (consumer id, id of the message) of dispatches to drop
    unsent_to: set[int] = set()  # consumers whose every dispatch is dropped (they were taken back)
    for kind, queue, entry, holder in reversed(records):
        if kind == ON_DISK:
            queue.on_disk -= 1
            queue.enqueued -= 1
        elif kind == COUNTER:
            entry.redelivery_counter = holder  # the record keeps the counter as it was
        elif kind == PURGED:
            _unpurge(queue, entry, holder)
        elif kind == SCHEDULED:
            jobs = queue._scheduled  # the record's queue slot holds the core
            jobs[:] = [job for job in jobs if job is not entry]
            heapq.heapify(jobs)
        elif kind == UNSCHEDULED:
            heapq.heappush(queue._scheduled, entry)
            queue.timers_set += 1
        elif kind == DURABLE_SAVED:
            queue._unmake_durable(entry)
        elif kind == DURABLE_DROPPED:
            queue._remake_durable(entry)
        elif kind == LOGGED:
            queue.take_back(entry)  # the queue slot holds the topic's log, the holder slot the memory usage
            holder.used -= entry.size
        elif kind == TRIMMED:
            queue.put_back(entry)
            holder.used += sum(e.size for e in entry)
        elif kind == LOGGED_ON_DISK:
            queue.disk.pop()  # the queue slot holds the log: the seq appended last
        elif kind == DISK_TRIMMED:
            queue.disk[0:0] = entry
        elif kind == LOG_SHARED:
            on_disk, next_seq, disk_after, was_paged = entry
            queue.enqueued -= queue.on_disk - on_disk
            queue.on_disk, queue.next_seq, queue.disk_after = on_disk, next_seq, disk_after
            if not was_paged:
                queue.journal.paged.pop(queue.destination.name, None)
            log, share = holder
            if share in log.shares:
                log.shares.remove(share)
        elif kind == SHARES_DROPPED:
            queue.shares.extend(entry)  # the queue slot holds the log
        elif kind == DEFERRED:
            queue._undefer(entry)
        elif kind == CAUGHT_UP:
            gone = queue._uncatch_up(entry, holder)
            if gone is not None:
                unsent_to.add(gone)
        elif kind == STORED:
            _unstore(queue, entry, unsent)
            if dead_letters is not None and entry.message.original_destination is not None:
                dead_letters.forget(queue.destination, entry.message.message_id)
        else:
            _unremove(queue, entry, holder)
    if unsent or unsent_to:
        output[:] = [
            d for d in output if (d.consumer_id, id(d.message)) not in unsent and d.consumer_id not in unsent_to
        ]
    return len(records)


def _unstore(queue: Queue, entry: QueueEntry, unsent: set[tuple[int, int]]) -> None:
    """A message the store never kept leaves its queue, as if it had never been sent."""
    if queue.entries.get(entry.seq) is not entry:
        return
    del queue.entries[entry.seq]
    if queue.held_ids is not None:
        queue.held_ids.discard(entry.message.message_id)
    queue.memory -= entry.size
    queue.usage.used -= entry.size
    queue.enqueued -= 1
    holder = entry.holder
    if holder is not None:  # dispatched in the same call: the dispatch is dropped before it is routed
        _let_go(holder, entry)
        unsent.add((holder.consumer_id, id(entry.message)))
        entry.holder = None
    else:
        queue._discard_pending(entry)


def _unremove(queue: Queue, entry: QueueEntry, holder: Subscription | None) -> None:
    """A message whose removal the store never saw comes back: to the consumer that held it, if that consumer is
    still there (its ack failed), else to the head of its queue."""
    if entry.seq in queue.entries:
        return
    queue.entries[entry.seq] = entry
    if queue.held_ids is not None:  # None: the check is off, every held id was minted (queue.py)
        queue.held_ids.add(entry.message.message_id)
    queue.memory += entry.size
    queue.usage.used += entry.size
    queue.dequeued -= 1
    entry.acked_in_txn = None
    if holder is not None and not holder.closed:
        holder.dispatched[entry.message.message_id] = entry
        entry.holder = holder
    else:
        entry.holder = None
        queue.redelivery.appendleft(entry)


def _unpurge(queue: Queue, entries: list[QueueEntry], on_disk: int) -> None:
    """A purge the store never saw: every message comes back, waiting (those that were in flight too: their consumers
    let go of them), in sequence order."""
    for entry in sorted(entries, key=lambda e: e.seq):
        entry.holder = None
        entry.acked_in_txn = None
        queue.entries[entry.seq] = entry
        if queue.held_ids is not None:
            queue.held_ids.add(entry.message.message_id)
        queue.memory += entry.size
        queue.usage.used += entry.size
        (queue.persistent if entry.message.persistent else queue.non_persistent).append(entry)
    queue.dequeued -= len(entries) + on_disk
    queue.on_disk = on_disk


def _let_go(holder: Subscription, entry: QueueEntry) -> None:
    """Take this very entry out of the holder's dispatched messages (a consumer on many queues keeps copies)."""
    discard = getattr(holder.dispatched, "discard", None)
    if discard is not None:
        discard(entry)
    else:
        holder.dispatched.pop(entry.message.message_id, None)
