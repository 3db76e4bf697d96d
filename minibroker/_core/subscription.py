"""A consumer as the broker sees it: its prefetch window and the messages dispatched to it and not yet acked.

The window rule is ActiveMQ's (``PrefetchSubscription``): a subscription may hold ``prefetch + extension``
unacknowledged dispatches. DELIVERED acks widen the window (``extension += count``), consumed acks narrow it again,
and a pull (prefetch 0) grants exactly one dispatch.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..message import Destination, Message

if TYPE_CHECKING:
    from ..selector import Selector

__all__ = ["EntryHolder", "MessageSource", "QueueEntry", "Subscription"]


class MessageSource(Protocol):
    """The destination a subscription takes messages from (a queue or a topic), as the subscription needs it."""

    def consume(self, entry: QueueEntry) -> None:
        """The message is done with: the destination lets go of it and counts it dequeued."""


class EntryHolder(Protocol):
    """A queue as a subscription on several queues needs it: which entries it holds, by sequence number."""

    @property
    def entries(self) -> dict[int, QueueEntry]: ...


@attrs.define(slots=True, eq=False)
class QueueEntry:
    """A message inside a destination: the shared message plus the broker's per-destination state."""

    message: Message
    seq: int
    redelivery_counter: int = 0
    #: the subscription holding it (dispatched, not acked), if any
    holder: Subscription | None = None
    #: id of the transaction whose STANDARD/INDIVIDUAL ack will remove it at commit
    acked_in_txn: int | None = None
    #: the bytes counted against its destination's memory limit (the message's estimate, kept for the removal)
    size: int = 0
    #: ActiveMQ's broker sequence id: one count across the broker's destinations, taken when the message arrived at
    #: this one (``seq`` counts per destination). What a client reports as the last message it delivered, so a
    #: closing connection's one number can be placed among several queues' messages (Queue.release)
    broker_seq: int = 0


@attrs.define(slots=True, eq=False)
class Subscription:
    consumer_id: int
    connection_id: int
    destination: Destination
    #: the Queue or Topic of ``destination``: where an acked message is let go of
    source: MessageSource
    prefetch: int
    selector: Selector | None = None
    priority: int = 0
    exclusive: bool = False
    browser: bool = False
    no_local: bool = False
    #: message_id -> entry, in dispatch order (a dict keeps insertion order and finds an id in O(1))
    dispatched: dict[str, QueueEntry] = attrs.field(factory=dict)
    extension: int = 0
    #: dispatches so far: a pull's timer compares it with its value when the pull was made
    dispatch_count: int = 0
    groups: int = 0
    closed: bool = False
    #: a wildcard or composite topic subscription's topics where messages wait for it, in the order they began to
    #: (None: any other subscription): when its window opens only those are dispatched, not every topic it reads
    waiting_in: OrderedDict[Any, None] | None = None
    #: a topic subscription's dispatched messages as ActiveMQ's TopicSubscription lists them for the topics'
    #: statistics (message id, topic): an ack takes its range from here (topic.py, ``count_acked``); None on queues
    inflight_record: deque[tuple[str, Any]] | None = None

    def room(self) -> int:
        """How many more messages may be dispatched now (ActiveMQ ``countBeforeFull``)."""
        if self.prefetch == 0:
            return self.extension
        return self.prefetch + self.extension - len(self.dispatched)

    def expand(self, amount: int) -> None:
        if self.prefetch != 0:
            self.extension += amount

    def contract(self, amount: int) -> None:
        if self.prefetch != 0:
            self.extension = max(0, self.extension - amount)

    def consume(self, entry: QueueEntry, contract: bool = True) -> None:
        """A message this subscription holds is done with: it leaves the subscription (narrowing the window by one
        unless ``contract`` is False) and its destination."""
        self.dispatched.pop(entry.message.message_id, None)
        if contract and self.extension and self.prefetch:
            self.extension -= 1  # contract(1), inline: one call less per ack
        self.source.consume(entry)  # still held: the store's undo log (undo.py) records who held it
        entry.holder = None

    def untrack(self, entry: QueueEntry) -> None:
        """Forget a dispatched message without consuming it (it leaves by another path: expiry)."""
        self.dispatched.pop(entry.message.message_id, None)

    def held_from(self, queue: EntryHolder) -> int:
        """How many of ``queue``'s messages this subscription holds (all it holds: it reads one destination)."""
        return len(self.dispatched)

    def let_go_of(self, queue: EntryHolder) -> None:
        """``queue`` was purged: forget the messages held from it (all of them: it reads one destination)."""
        self.dispatched.clear()

    def matches(self, message: Message, redelivery_counter: int) -> bool:
        if self.selector is None:
            return True
        return self.selector.matches(header_lookup(message, redelivery_counter))


def header_lookup(message: Message, redelivery_counter: int):  # type: ignore[no-untyped-def]
    """The identifier lookup a selector sees: JMS headers first, then application properties."""

    def lookup(name: str) -> object:
        if name.startswith("JMS"):
            if name == "JMSPriority":
                return message.priority
            if name == "JMSDeliveryMode":
                return "PERSISTENT" if message.persistent else "NON_PERSISTENT"
            if name == "JMSMessageID":
                return message.message_id
            if name == "JMSTimestamp":
                return int(message.timestamp * 1000)
            if name == "JMSCorrelationID":
                return message.correlation_id
            if name == "JMSType":
                return message.type
            if name == "JMSReplyTo":
                return None if message.reply_to is None else str(message.reply_to)
            if name == "JMSRedelivered":
                return redelivery_counter > 0
            if name == "JMSXDeliveryCount":
                return redelivery_counter + 1
            if name == "JMSXGroupID":
                return message.group_id
            if name == "JMSXGroupSeq":
                return message.group_seq
            if name == "JMSExpiration":
                return int(message.expiration * 1000)
        return message.properties.get(name)

    return lookup
