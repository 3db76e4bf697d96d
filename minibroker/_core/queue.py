"""One queue: its messages, the order they are dispatched in, and its consumers.

Theory of operation
-------------------
Every message not yet acked lives in ``entries`` (so ``size`` counts in-flight messages too, as ActiveMQ's queue depth
does). A message waiting for a consumer is in one of three places, which together reproduce ActiveMQ's order:

1. ``redelivery``: messages given back by a closed consumer go to the head, in their original order;
2. ``paged``: messages paged in for dispatch (ActiveMQ's ``pagedInPendingDispatch``), in the order they were paged;
3. the store cursor: persistent and non-persistent messages in two lists, not yet paged in. Paging in (whenever the
   queue has consumers and tries to dispatch) keeps taking from the list it is on until that runs dry, then switches
   (``StoreQueueCursor.getNextCursor``). So a backlog queued before any consumer came comes out persistent first,
   and a message sent later is paged in behind whatever was paged in before it.

Each list is FIFO, or by priority when the destination has ``prioritized_messages``.

Dispatch walks the pending messages in that order and gives each to the first consumer (priority bands, round-robin
inside a band) that has room in its prefetch window, matches its selector, is the exclusive consumer if there is one,
and owns the message's group. Messages nobody can take stay where they are.

A message leaves the queue only through one of its methods, one per final move of the lifecycle (lifecycle.py):
:meth:`Queue.consume` (acked or committed), :meth:`Queue.expire`, :meth:`Queue.drop` (a cursor ack) and
:meth:`Queue.purge`; each tells the store and keeps the counters (``dequeued``, ``expired``, ``memory``) right.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from ..message import Destination, Message
from .effects import Dispatch
from .journal import COUNTER, ON_DISK, PURGED, REMOVED, STORED, Journal, Purged, Redelivered, Removed, Stored
from .numbering import BrokerSequence
from .policy import DestinationPolicy
from .subscription import QueueEntry, Subscription
from .usage import MemoryUsage

__all__ = ["Queue", "QueueStatistics"]


@attrs.frozen(slots=True)
class QueueStatistics:
    """A snapshot of a queue's counters, named as ActiveMQ's JMX attributes."""

    name: str
    size: int
    inflight: int
    enqueued: int
    dequeued: int
    expired: int
    consumers: int
    dispatched: int


#: builds a Dispatch without the NamedTuple's Python-level ``__new__`` (once per dispatched message)
_new_dispatch = tuple.__new__

#: ActiveMQ ``PolicyEntry.maxPageSize``: how many messages are paged in for dispatch at most
MAX_PAGE_SIZE = 200


class _Fifo(deque[QueueEntry]):
    """A plain FIFO list (a deque: its append/popleft run in C on the hot path)."""

    __slots__ = ()


class _ByPriority:
    """Ten FIFO lists, highest priority first (``prioritizedMessages``)."""

    __slots__ = ("count", "lists")

    def __init__(self) -> None:
        self.lists: list[deque[QueueEntry]] = [deque() for _ in range(10)]
        self.count = 0

    @staticmethod
    def _level(entry: QueueEntry) -> int:
        return min(9, max(0, entry.message.priority))

    def append(self, entry: QueueEntry) -> None:
        self.lists[self._level(entry)].append(entry)
        self.count += 1

    def appendleft(self, entry: QueueEntry) -> None:
        self.lists[self._level(entry)].appendleft(entry)
        self.count += 1

    def popleft(self) -> QueueEntry:
        for level in range(9, -1, -1):
            if self.lists[level]:
                self.count -= 1
                return self.lists[level].popleft()
        raise IndexError("pop from an empty priority list")

    def remove(self, entry: QueueEntry) -> None:
        self.lists[self._level(entry)].remove(entry)
        self.count -= 1

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[QueueEntry]:
        for level in range(9, -1, -1):
            yield from self.lists[level]


def _filter_fifo(items: deque[QueueEntry], doomed: set[int]) -> int:
    """Remove the doomed entries (by sequence number) from one FIFO list; the common case is a run at its head."""
    removed = 0
    while items and items[0].seq in doomed:
        items.popleft()
        removed += 1
    if any(e.seq in doomed for e in items):
        kept = [e for e in items if e.seq not in doomed]
        removed += len(items) - len(kept)
        items.clear()
        items.extend(kept)
    return removed


class Queue:
    """A point-to-point destination. All methods are synchronous and take the current time as an argument."""

    def __init__(
        self,
        destination: Destination,
        policy: DestinationPolicy,
        usage: MemoryUsage | None = None,
        sequence: BrokerSequence | None = None,
    ) -> None:
        self.destination = destination
        #: scheduler BROWSEs replying here a page at a time (scheduling.py), None when there are none
        self.browse_feeds: deque[Any] | None = None
        #: the broker's sequence (ActiveMQ's broker sequence id, shared by every destination): each arriving message
        #: takes the next number, in ``QueueEntry.broker_seq``
        self.broker_sequence = BrokerSequence() if sequence is None else sequence
        self.policy = policy
        self.entries: dict[int, QueueEntry] = {}
        #: the message ids of ``entries`` (queued or in flight, not yet acked): a send of one of them is a duplicate.
        #: None while the queue has only held messages whose ids were minted for their send (an in-process
        #: producer's, which never sends one twice: no duplicate possible); the first other message turns the check
        #: on (:meth:`duplicate_check`), so a queue pays for it only where a duplicate can come (issue 45)
        self.held_ids: set[str] | None = None
        self.redelivery: deque[QueueEntry] = deque()
        make = _ByPriority if policy.prioritized_messages else _Fifo
        self.persistent: _Fifo | _ByPriority = make()
        self.non_persistent: _Fifo | _ByPriority = make()
        self.paged: _Fifo | _ByPriority = make()
        self._on_persistent = True
        self.consumers: list[Subscription] = []
        self.group_owners: dict[str, Subscription] = {}
        self.next_seq = 0
        self.enqueued = 0
        self.dequeued = 0
        self.expired = 0
        self.dispatched_total = 0
        self.exclusive_count = 0
        #: number of messages paused (fault injection / flow control): no dispatch while True
        self.paused = False
        #: bytes held by unacked messages (``Message.size_estimate()``), for the memory limit
        self.memory = 0
        #: the broker's memory usage this queue's bytes count against (its system memory limit)
        self.usage = usage if usage is not None else MemoryUsage(0)
        #: messages only on disk, after ``disk_after`` in sequence order: a restart loads a big queue a page at a
        #: time (paging.py), and sends wait on disk behind them
        self.on_disk = 0
        self.disk_after = -1
        #: bytes of messages sent to this queue in transactions not yet committed: they count against the memory
        #: limit from the send on, as in ActiveMQ, so a transaction cannot put many times the limit into a queue
        self.txn_memory = 0
        #: where persistent messages' changes are recorded for the store (see journal.py); None: no store
        self.journal: Journal | None = None

    # -- statistics -------------------------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return len(self.entries) + self.on_disk

    @property
    def inflight(self) -> int:
        return sum(s.held_from(self) for s in self.consumers)

    @property
    def pending_count(self) -> int:
        return len(self.redelivery) + len(self.paged) + len(self.persistent) + len(self.non_persistent)

    def statistics(self) -> QueueStatistics:
        return QueueStatistics(
            name=self.destination.name,
            size=self.size,
            inflight=self.inflight,
            enqueued=self.enqueued,
            dequeued=self.dequeued,
            expired=self.expired,
            consumers=len(self.consumers),
            dispatched=self.dispatched_total,
        )

    # -- adding and removing messages -------------------------------------------------------------------------------

    def duplicate_check(self) -> set[str]:
        """The held ids, the check turned on first if it was off (the ids of every entry: all were minted)."""
        held = self.held_ids
        if held is None:
            held = self.held_ids = {entry.message.message_id for entry in self.entries.values()}
        return held

    def add(
        self, message: Message, redelivery_counter: int = 0, broker_seq: int = 0, minted: bool = False
    ) -> QueueEntry | None:
        """Append a newly sent message (tail of the store cursor); None when it waits on disk, behind messages a
        restart has not paged in yet. ``broker_seq``: the broker sequence id it already has (0: it takes the next).
        ``minted``: its id was minted for this send (see ``held_ids``); any other message turns the duplicate check
        on."""
        seq = self.next_seq
        self.next_seq = seq + 1
        if self.on_disk and message.persistent and self.journal is not None:
            self.on_disk += 1
            self.enqueued += 1
            self.journal.append(Stored(self.destination.name, seq, message, redelivery_counter))
            self.journal.undo.append((ON_DISK, self, None, None))
            return None
        size = len(message.body) + 64 * (1 + len(message.properties))  # Message.size_estimate, inline
        if not broker_seq:
            sequence = self.broker_sequence
            sequence.last = broker_seq = sequence.last + 1
        entry = QueueEntry(message, seq, redelivery_counter, None, None, size, broker_seq)
        self.entries[seq] = entry
        held = self.held_ids
        if held is not None:
            held.add(message.message_id)
        elif not minted:
            self.duplicate_check()
        self.enqueued += 1
        self.memory += size
        usage = self.usage
        usage.used += size
        if usage.used >= usage.limit and not usage.full:
            usage.fill()
        if message.persistent:
            self.persistent.append(entry)
            if self.journal is not None:
                self.journal.append(Stored(self.destination.name, seq, message, redelivery_counter))
                self.journal.undo.append((STORED, self, entry, None))
        else:
            self.non_persistent.append(entry)
        return entry

    def restore(self, message: Message, seq: int, redelivery_counter: int) -> QueueEntry:
        """Put back a persistent message loaded from the store (not journaled, not counted as enqueued)."""
        size = message.size_estimate()
        sequence = self.broker_sequence
        sequence.last = broker_seq = sequence.last + 1
        entry = QueueEntry(message, seq, redelivery_counter, None, None, size, broker_seq)
        self.entries[seq] = entry
        self.duplicate_check().add(message.message_id)
        if seq >= self.next_seq:
            self.next_seq = seq + 1
        self.memory += size
        usage = self.usage
        usage.used += size
        if usage.used >= usage.limit and not usage.full:
            usage.fill()
        self.persistent.append(entry)
        return entry

    # -- the end of a message's life (the transitions to a final state in lifecycle.py) -----------------------------

    def consume(self, entry: QueueEntry) -> None:
        """A message a consumer held is done with (acked, committed, poisoned): it leaves for good, counted dequeued.
        Its subscription has already let go of it."""
        # _forget, inline: once per acked message
        if self.entries.pop(entry.seq, None) is not None:
            held = self.held_ids
            if held is not None:
                held.discard(entry.message.message_id)
            self.memory -= entry.size
            self.usage.used -= entry.size  # a full usage notices it is free again when asked (has_space)
            if self.journal is not None and entry.message.persistent:
                self.journal.append(Removed(self.destination.name, entry.seq))
                self.journal.undo.append((REMOVED, self, entry, entry.holder))
        self.dequeued += 1

    def expire(self, entry: QueueEntry, *, pending: bool) -> None:
        """A message's time ran out: it leaves for good (taken out of the pending lists first when ``pending``),
        counted expired and dequeued. Where it goes next is the dead-letter strategy's business."""
        if pending:
            self._discard_pending(entry)
        self._forget(entry)
        self.expired += 1
        self.dequeued += 1

    def drop(self, entries: Sequence[QueueEntry]) -> None:
        """Pending messages leave for good without a dispatch (a cursor ack), counted dequeued; one pass per pending
        list however many go."""
        if not entries:
            return
        self._drop_pending({e.seq for e in entries})
        for entry in entries:
            self._forget(entry)
        self.dequeued += len(entries)

    def purge(self) -> int:
        """Every message leaves, in-flight ones included (their consumers forget them: a later ack of one fails as
        "Unmatched acknowledge", as ActiveMQ's does); nothing is dead-lettered. Returns how many went."""
        count = len(self.entries)
        if self.journal is not None:
            self.journal.undo.append((PURGED, self, list(self.entries.values()), self.on_disk))
        for sub in self.consumers:
            sub.let_go_of(self)
        count += self.on_disk
        self.on_disk = 0
        self.entries.clear()
        if self.held_ids is not None:
            self.held_ids.clear()
        self.release_memory()
        if self.journal is not None:
            self.journal.append(Purged(self.destination.name))
        self.redelivery.clear()
        make = _ByPriority if self.policy.prioritized_messages else _Fifo
        self.persistent = make()
        self.non_persistent = make()
        self.paged = make()
        self.dequeued += count
        return count

    def release_memory(self) -> None:
        """Give back every byte this queue counts against the broker's usage (purged, or the queue deleted)."""
        usage = self.usage
        usage.used -= self.memory
        self.memory = 0
        if usage.full and usage.used < usage.limit:
            usage.free()

    def _forget(self, entry: QueueEntry) -> None:
        """Let go of an entry for good, and tell the store (an entry purged before is not there any more)."""
        if self.entries.pop(entry.seq, None) is not None:
            held = self.held_ids
            if held is not None:
                held.discard(entry.message.message_id)
            self.memory -= entry.size
            self.usage.used -= entry.size  # a full usage notices it is free again when asked (has_space)
            if self.journal is not None and entry.message.persistent:
                self.journal.append(Removed(self.destination.name, entry.seq))
                self.journal.undo.append((REMOVED, self, entry, entry.holder))

    def _drop_pending(self, doomed: set[int]) -> None:
        """Take the doomed entries (by sequence number) out of the pending lists, in one pass per list."""
        left = len(doomed) - _filter_fifo(self.redelivery, doomed)
        for pending in (self.paged, self.persistent, self.non_persistent):
            if left <= 0:
                return
            if isinstance(pending, _ByPriority):
                for level in pending.lists:
                    n = _filter_fifo(level, doomed)
                    pending.count -= n
                    left -= n
            else:
                left -= _filter_fifo(pending, doomed)

    def _discard_pending(self, entry: QueueEntry) -> None:
        """Take a message out of the pending structure (it is being removed while waiting)."""
        if entry in self.redelivery:
            self.redelivery.remove(entry)
            return
        for lst in (self.paged, self.persistent if entry.message.persistent else self.non_persistent):
            try:
                lst.remove(entry)
                return
            except ValueError:
                pass

    def release(self, entries: list[QueueEntry], last_delivered_seq: int | None) -> None:
        """A closing consumer's messages go back to the head (semantics §1, "Close"). Those its application was
        handed count one more delivery: the ones up to ``last_delivered_seq`` (none, if it held no such message),
        every one when that is None (the transport failed: nobody knows)."""
        if last_delivered_seq is None or any(e.broker_seq == last_delivered_seq for e in entries):
            for entry in entries:
                if self.journal is not None and entry.message.persistent:
                    self.journal.undo.append((COUNTER, self, entry, entry.redelivery_counter))
                entry.redelivery_counter += 1
                if entry.broker_seq == last_delivered_seq:
                    break
        self.give_back(entries)

    def release_durable(self, entries: list[QueueEntry], last_delivered_seq: int | None) -> None:
        """A durable subscription going offline gives back what it held (ActiveMQ's ``DurableTopicSubscription.
        deactivate``): every message up to ``last_delivered_seq`` by broker sequence counts one more delivery, whether
        or not the subscriber still holds that one message (unlike a queue's :meth:`release`); all of them when it is
        None or 0, none when the application was handed nothing (-1)."""
        for entry in entries:
            if last_delivered_seq is None or last_delivered_seq == 0 or 0 < last_delivered_seq >= entry.broker_seq:
                if self.journal is not None and entry.message.persistent:
                    self.journal.undo.append((COUNTER, self, entry, entry.redelivery_counter))
                entry.redelivery_counter += 1
        self.give_back(entries)

    def forget_redeliveries(self, entries: list[QueueEntry]) -> None:
        """A durable subscription's client rolled these back after a redelivery (a REDELIVERED ack): ActiveMQ's
        ``DurableTopicSubscription`` drops the counts it kept for them, so the next time the subscription goes
        offline counts from zero again."""
        journal = self.journal
        for entry in entries:
            if entry.redelivery_counter:
                if journal is not None and entry.message.persistent:
                    journal.undo.append((COUNTER, self, entry, entry.redelivery_counter))
                    journal.append(Redelivered(self.destination.name, entry.seq, 0))
                entry.redelivery_counter = 0

    def give_back(self, entries: list[QueueEntry]) -> None:
        """Put messages released by a consumer back at the head of the queue, in their original order."""
        for entry in reversed(entries):
            entry.holder = None
            entry.acked_in_txn = None
            self.redelivery.appendleft(entry)
        journal = self.journal
        if journal is not None:
            name = self.destination.name
            journal.extend(Redelivered(name, e.seq, e.redelivery_counter) for e in entries if e.message.persistent)

    def pending(self) -> Iterator[QueueEntry]:
        """Pending messages in dispatch order (for browsing and tests)."""
        yield from self.redelivery
        yield from self.paged
        first, second = (
            (self.persistent, self.non_persistent) if self._on_persistent else (self.non_persistent, self.persistent)
        )
        yield from first
        yield from second

    def _next_cursor(self) -> _Fifo | _ByPriority | None:
        """ActiveMQ's ``StoreQueueCursor.getNextCursor``: stay on a list while it has messages, else switch."""
        current = self.persistent if self._on_persistent else self.non_persistent
        if current:
            return current
        other = self.non_persistent if self._on_persistent else self.persistent
        if other:
            self._on_persistent = not self._on_persistent
            return other
        return None

    # -- consumers --------------------------------------------------------------------------------------------------

    def add_consumer(self, sub: Subscription) -> None:
        """Insert by priority (highest first); equal priorities keep arrival order. Browsers never take messages."""
        if sub.browser:
            return
        if sub.exclusive:
            self.exclusive_count += 1
        index = len(self.consumers)
        for i, other in enumerate(self.consumers):
            if other.priority < sub.priority:
                index = i
                break
        self.consumers.insert(index, sub)

    def remove_consumer(self, sub: Subscription) -> None:
        if sub in self.consumers:
            self.consumers.remove(sub)
            if sub.exclusive:
                self.exclusive_count -= 1
        for group, owner in list(self.group_owners.items()):
            if owner is sub:
                del self.group_owners[group]

    def _rotate(self, sub: Subscription) -> None:
        """Round-robin: move the consumer that just got a message to the end of its priority band."""
        consumers = self.consumers
        if len(consumers) < 2 or self.policy.strict_order_dispatch or sub.exclusive:
            return
        i = consumers.index(sub)
        if consumers[-1].priority == sub.priority:
            # the last band (all consumers, when priorities are equal): to the end, without a scan
            consumers.append(consumers.pop(i))
            return
        j = i + 1
        while j < len(consumers) and consumers[j].priority == sub.priority:
            j += 1
        if j - 1 > i:
            consumers.insert(j, consumers.pop(i))

    def _exclusive_owner(self) -> Subscription | None:
        """The exclusive consumer that receives everything, if any (highest priority, then first to attach)."""
        owner: Subscription | None = None
        for sub in self.consumers:
            if sub.exclusive and (owner is None or sub.priority > owner.priority):
                owner = sub
        return owner

    # -- dispatch ---------------------------------------------------------------------------------------------------

    def _choose(self, entry: QueueEntry, exclusive: Subscription | None) -> tuple[Subscription | None, bool]:
        """The consumer for ``entry`` and whether it is the first message of a group for that consumer.

        Groups (``Queue.assignMessageGroup``): a group's first message (or any with JMSXGroupSeq 1) binds the group
        to the consumer chosen for it, preferring, among equal priorities, the consumer that owns fewer groups;
        later messages go only to the owner; a message with JMSXGroupSeq < 0 goes to the owner and closes the group.
        """
        message = entry.message
        group = message.group_id
        if group is not None:
            owner = self.group_owners.get(group)
            if owner is not None and owner.closed:
                del self.group_owners[group]
                owner = None
            if owner is not None and message.group_seq != 1:
                if owner.room() <= 0 or not owner.matches(message, entry.redelivery_counter):
                    return None, False
                if message.group_seq < 0:
                    del self.group_owners[group]
                    owner.groups -= 1
                return owner, False
            chosen = self._new_group_owner(entry, exclusive)
            if chosen is None:
                return None, False
            if owner is not None:
                owner.groups -= 1
            self.group_owners[group] = chosen
            chosen.groups += 1
            return chosen, True
        for sub in self.consumers:
            if sub.room() <= 0:
                continue
            if exclusive is not None and sub is not exclusive:
                continue
            if sub.selector is not None and not sub.matches(message, entry.redelivery_counter):
                continue
            return sub, False
        return None, False

    def _new_group_owner(self, entry: QueueEntry, exclusive: Subscription | None) -> Subscription | None:
        best: Subscription | None = None
        for sub in self.consumers:
            if sub.room() <= 0 or (exclusive is not None and sub is not exclusive):
                continue
            if sub.selector is not None and not sub.matches(entry.message, entry.redelivery_counter):
                continue
            if (
                best is None
                or sub.priority > best.priority
                or (sub.priority == best.priority and sub.groups < best.groups)
            ):
                best = sub
        return best

    def dispatch(self, now: float, out: list[Dispatch], expired: list[QueueEntry], limit: int | None = None) -> None:
        """Hand pending messages to consumers with room (at most ``limit``). Expired ones go to ``expired``.

        Call it only when :meth:`dispatchable` says so (the broker checks that first, and it is not checked again).
        """
        if limit is not None:
            self._dispatch_some(now, out, expired, limit)
            return
        consumers = self.consumers
        if len(consumers) == 1 and not self.exclusive_count and consumers[0].selector is None:
            sub = consumers[0]
            if not self.redelivery and not self.paged and not (self.persistent and self.non_persistent):
                self._dispatch_simple(sub, now, out, expired)
            else:
                self.page_in()
                self._dispatch_single(sub, now, out, expired)
            return
        self.page_in()
        self._dispatch_general(now, out, expired)

    def _dispatch_general(self, now: float, out: list[Dispatch], expired: list[QueueEntry]) -> None:
        exclusive = self._exclusive_owner() if self.exclusive_count else None
        for waiting in (self.redelivery, self.paged):
            skipped: list[QueueEntry] = []
            while waiting and self._has_room():
                entry = waiting.popleft()
                if not self._offer(entry, now, exclusive, out, expired):
                    skipped.append(entry)
            for entry in reversed(skipped):
                waiting.appendleft(entry)
            if not self._has_room():
                return

    def _dispatch_single(self, sub: Subscription, now: float, out: list[Dispatch], expired: list[QueueEntry]) -> None:
        """One consumer without a selector, with messages paged in or waiting for redelivery: the general path's
        order (redeliveries, then the paged-in list) without its per-message choice of a consumer. A message of a
        group hands the rest to the general path (ownership, first-for-consumer flag)."""
        room = sub.room()
        for waiting in (self.redelivery, self.paged):
            while waiting and room > 0:
                entry = waiting.popleft()
                message = entry.message
                if message.group_id is not None:
                    waiting.appendleft(entry)
                    self._dispatch_general(now, out, expired)
                    return
                if message.expiration and now >= message.expiration:
                    expired.append(entry)
                    continue
                self.dispatch_to(sub, entry, out)
                room -= 1

    def _dispatch_simple(self, sub: Subscription, now: float, out: list[Dispatch], expired: list[QueueEntry]) -> None:
        """The common case, one consumer without a selector, nothing paged in and one kind of persistence waiting:
        take messages straight from the store cursor (paging them in first would give the same order)."""
        room = sub.room()
        # one kind of persistence waits (the caller checked): the store cursor stays on that list to the end
        source = self._next_cursor()
        # the loop's reads bound once and its counters added once after it: once per dispatched message (issue 45)
        dispatched, append, consumer_id = sub.dispatched, out.append, sub.consumer_id
        count = 0
        while room > 0 and source:
            entry = source.popleft()
            message = entry.message
            if message.expiration and now >= message.expiration:
                expired.append(entry)
                continue
            if message.group_id is not None:
                # groups need the general path (ownership, first-for-consumer flag)
                source.appendleft(entry)
                self._count_dispatched(sub, count)
                self.page_in()
                self._dispatch_general(now, out, expired)
                return
            entry.holder = sub
            dispatched[message.message_id] = entry
            append(
                _new_dispatch(
                    Dispatch, (consumer_id, message, entry.seq, entry.redelivery_counter, False, entry.broker_seq)
                )
            )
            count += 1
            room -= 1
        self._count_dispatched(sub, count)

    def _count_dispatched(self, sub: Subscription, count: int) -> None:
        """``count`` messages were dispatched to ``sub`` (a pull consumer's grant is used up by them)."""
        sub.dispatch_count += count
        if sub.prefetch == 0:
            sub.extension = max(0, sub.extension - count)
        self.dispatched_total += count

    def page_in(self) -> None:
        """Move messages from the store cursor to the paged-in list, up to ActiveMQ's ``maxPageSize``."""
        paged = self.paged
        while len(paged) < MAX_PAGE_SIZE:
            cursor = self._next_cursor()
            if cursor is None:
                return
            paged.append(cursor.popleft())

    def dispatchable(self) -> bool:
        """Worth a :meth:`dispatch`: messages wait, the queue is not paused, and some consumer has room (one cheap
        check before reading the clock, as most sends to a busy queue find every window full)."""
        if self.paused or not (self.redelivery or self.paged or self.persistent or self.non_persistent):
            return False
        for sub in self.consumers:  # _has_room, inline: once per send to a queue with consumers
            if (sub.extension if sub.prefetch == 0 else sub.prefetch + sub.extension - len(sub.dispatched)) > 0:
                return True
        return False

    def _dispatch_some(self, now: float, out: list[Dispatch], expired: list[QueueEntry], limit: int) -> None:
        """The slow, general path: at most ``limit`` dispatches, in the same order as :meth:`dispatch`."""
        self.page_in()
        exclusive = self._exclusive_owner() if self.exclusive_count else None
        start = len(out)
        for entry in list(self.pending()):
            if len(out) - start >= limit or not self._has_room():
                return
            if self._offer(entry, now, exclusive, out, expired):
                self._discard_pending(entry)

    def _has_room(self) -> bool:
        for sub in self.consumers:
            if (sub.extension if sub.prefetch == 0 else sub.prefetch + sub.extension - len(sub.dispatched)) > 0:
                return True
        return False

    def _offer(
        self,
        entry: QueueEntry,
        now: float,
        exclusive: Subscription | None,
        out: list[Dispatch],
        expired: list[QueueEntry],
    ) -> bool:
        """Try to dispatch one entry; True if it left the pending structure (dispatched or expired)."""
        message = entry.message
        if message.expiration and now >= message.expiration:
            expired.append(entry)
            return True
        sub, first = self._choose(entry, exclusive)
        if sub is None:
            return False
        self.dispatch_to(sub, entry, out, group_first=first)
        self._rotate(sub)
        return True

    def dispatch_to(self, sub: Subscription, entry: QueueEntry, out: list[Dispatch], group_first: bool = False) -> None:
        entry.holder = sub
        sub.dispatched[entry.message.message_id] = entry
        sub.dispatch_count += 1
        if sub.prefetch == 0:
            sub.extension = max(0, sub.extension - 1)
        self.dispatched_total += 1
        out.append(
            _new_dispatch(
                Dispatch,
                (sub.consumer_id, entry.message, entry.seq, entry.redelivery_counter, group_first, entry.broker_seq),
            )
        )
