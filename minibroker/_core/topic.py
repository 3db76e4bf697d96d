"""A topic with non-durable subscribers: each subscriber gets its own copy of every message published while it is
subscribed, through its own prefetch window and its own pending list."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from ..message import Destination, Message
from .effects import Dispatch
from .subscription import QueueEntry, Subscription

if TYPE_CHECKING:
    from .durable import DurableSubscription

__all__ = ["Topic"]


class Topic:
    def __init__(self, destination: Destination, pending_limit: int = -1) -> None:
        self.destination = destination
        #: a subscriber's most waiting messages (DestinationPolicy.pending_message_limit; -1: no limit)
        self.pending_limit = pending_limit
        #: (subscription, entry) discarded by the limit since the broker last looked (it dead-letters them)
        self.discarded: list[tuple[Subscription, QueueEntry]] = []
        self.subscriptions: list[Subscription] = []
        #: durable subscriptions of this topic, active or not (durable.py): each publish feeds their queues
        self.durables: list[DurableSubscription] = []
        self.pending: dict[int, deque[QueueEntry]] = {}
        self.next_seq = 0
        #: the retained message (retained.py), what a retroactive subscriber gets first
        self.retained: Message | None = None
        self.enqueued = 0
        self.dequeued = 0
        self.expired = 0

    def add_subscription(self, sub: Subscription) -> None:
        self.subscriptions.append(sub)
        self.pending[sub.consumer_id] = deque()

    def remove_subscription(self, sub: Subscription) -> None:
        if sub in self.subscriptions:
            self.subscriptions.remove(sub)
        self.pending.pop(sub.consumer_id, None)

    def recover(self, sub: Subscription) -> bool:
        """Give a retroactive subscriber the retained message first; whether there was one."""
        retained = self.retained
        if retained is None or sub.consumer_id not in self.pending:
            return False
        self.pending[sub.consumer_id].appendleft(QueueEntry(retained, self.next_seq))
        self.next_seq += 1
        if sub.waiting_in is not None:
            sub.waiting_in[self] = None
        return True

    def consume(self, entry: QueueEntry) -> None:
        """A subscriber acked its copy: only counted, as the copy was the subscriber's own."""
        self.dequeued += 1

    def publish(self, message: Message, publisher_connection: int) -> None:
        seq = self.next_seq
        self.next_seq = seq + 1
        self.enqueued += 1
        for sub in self.subscriptions:
            if sub.no_local and sub.connection_id == publisher_connection:
                continue
            if sub.selector is not None and not sub.matches(message, 0):
                continue
            pending = self.pending[sub.consumer_id]
            pending.append(QueueEntry(message, seq))
            waiting = sub.waiting_in
            if waiting is not None:
                waiting[self] = None
            if 0 <= self.pending_limit < len(pending):
                self._discard_oldest(sub, pending)

    def _discard_oldest(self, sub: Subscription, pending: deque[QueueEntry]) -> None:
        """ActiveMQ's TopicSubscription: what waits beyond the window is kept to the limit, the oldest going first
        (the first ``room`` entries are about to be dispatched, so they are not waiting)."""
        room = max(sub.room(), 0)
        while len(pending) - room > self.pending_limit:
            entry = pending[room]
            del pending[room]
            self.dequeued += 1
            self.discarded.append((sub, entry))

    def dispatch(self, now: float, out: list[Dispatch], expired: list[QueueEntry]) -> None:
        for sub in self.subscriptions:
            pending = self.pending[sub.consumer_id]
            while pending and sub.room() > 0:
                entry = pending.popleft()
                if entry.message.expiration and now >= entry.message.expiration:
                    expired.append(entry)
                    continue
                entry.holder = sub
                sub.dispatched[entry.message.message_id] = entry
                sub.dispatch_count += 1
                if sub.prefetch == 0:
                    sub.extension = max(0, sub.extension - 1)
                out.append(
                    tuple.__new__(
                        Dispatch, (sub.consumer_id, entry.message, entry.seq, entry.redelivery_counter, False)
                    )
                )
