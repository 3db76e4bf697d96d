"""A topic with non-durable subscribers: each subscriber gets its own copy of every message published while it is
subscribed, through its own prefetch window and its own pending list."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from itertools import chain
from types import MappingProxyType
from typing import TYPE_CHECKING

import attrs

from ..message import Destination, Message
from .effects import Dispatch
from .numbering import BrokerSequence
from .subscription import QueueEntry, Subscription

if TYPE_CHECKING:
    from .durable import DurableSubscription
    from .topic_log import TopicLog

__all__ = ["NOTHING_WAITING", "Topic", "count_acked", "count_before"]

#: what ``Topic.pending`` holds for a wildcard or composite subscriber with nothing waiting on that topic: such a
#: subscriber joins every topic it reads (an MQTT ``#``: 50,000), and an empty deque per topic was one more object
#: for each full garbage collection to walk
NOTHING_WAITING: tuple[()] = ()

#: the registry of a topic made without its broker's (Topic(subscriptions=...))
_NO_REGISTRY: Mapping[int, Subscription] = MappingProxyType({})

#: a retained message's fields after its id and destination, in Message's order, from its body (Topic.retained)
_KEPT_FIELDS = tuple(field.name for field in attrs.fields(Message)[2:])


class Topic:
    # Lists most topics never fill start as the shared empty tuple, and become lists on the first add (the methods
    # below): a broker with 50,000 MQTT topics kept four empty lists each, objects the garbage collector walks on
    # every full collection (issue 31: 150 ms pauses during a retained replay).
    #: (subscription, entry) discarded by the limit since the broker last looked (it dead-letters them)
    discarded: list[tuple[Subscription, QueueEntry]] | tuple[()] = ()
    #: durable subscriptions of this topic, active or not (durable.py)
    durables: list[DurableSubscription] | tuple[()] = ()
    #: those a publish feeds a copy, in the order of ``durables``: the others read ``log``
    fed: list[DurableSubscription] | tuple[()] = ()
    #: the one copy of what its offline durable subscriptions have not had yet (topic_log.py), once one went away
    log: TopicLog | None = None
    #: the retained message's fields, its destination left out (``retained``)
    _retained: tuple[object, ...] | None = None

    def __init__(
        self,
        destination: Destination,
        pending_limit: int = -1,
        sequence: BrokerSequence | None = None,
        subscriptions: Mapping[int, Subscription] = _NO_REGISTRY,
    ) -> None:
        self.destination = destination
        #: the broker's subscriptions by consumer id, shared by every topic: ``pending`` keys are consumer ids
        self.registry = subscriptions
        #: the broker's sequence (see Queue.broker_sequence): one number per published message
        self.broker_sequence = BrokerSequence() if sequence is None else sequence
        #: a subscriber's most waiting messages (DestinationPolicy.pending_message_limit; -1: no limit)
        self.pending_limit = pending_limit
        #: the subscribers by consumer id, in the order they subscribed, each with its waiting copies
        #: (``NOTHING_WAITING`` or a deque). Keyed by id, not by subscription, so that a topic whose subscribers
        #: have nothing waiting holds only ints and empty tuples: CPython's collector stops tracking such a dict.
        #: A wildcard subscriber joins every topic it reads (an MQTT ``#``: 50,000 of them), and a dict (or list)
        #: holding the subscription itself was one more object per topic for every full collection to walk.
        self.pending: dict[int, deque[QueueEntry] | tuple[()]] = {}
        self.next_seq = 0
        self.enqueued = 0
        self.dequeued = 0
        self.expired = 0
        #: dispatched to non-durable subscribers and not acked: ActiveMQ's topic InFlightCount, which a subscriber
        #: closing with unacked messages leaves as it is (recorded, mixed corpus)
        self.inflight = 0

    @property
    def retained(self) -> Message | None:
        """The retained message (retained.py), what a retroactive subscriber gets first: built again on each read.

        It is kept as a tuple of its fields without its destination (the topic's), which CPython's collector stops
        tracking once it finds nothing in it to walk: a Message object per topic was one more object for every full
        collection to visit (50,000 MQTT retained topics: 50,000 more, and 20 ms more of each pause)."""
        kept = self._retained
        if kept is None:
            return None
        message_id, body, pairs, *rest = kept
        properties = dict(zip(pairs[::2], pairs[1::2], strict=True))  # type: ignore[index]
        return Message(message_id, self.destination, body, properties, *rest)  # type: ignore[arg-type]

    @retained.setter
    def retained(self, message: Message | None) -> None:
        if message is None:
            self._retained = None
        elif message.destination != self.destination:
            raise ValueError(f"{message.message_id} is not a message of {self.destination}")
        else:
            # the properties as one flat tuple, key, value, key, value: a tuple holding a dict stays tracked even
            # when the dict is not, and each level of nested tuples takes the collector one more pass to let go of
            body, _properties, *rest = (getattr(message, name) for name in _KEPT_FIELDS)
            pairs = tuple(chain.from_iterable(message.properties.items()))
            self._retained = (message.message_id, body, pairs, *rest)

    def add_durable(self, durable: DurableSubscription, fed: bool = True) -> None:
        """``durable`` reads this topic (fed a copy of each message unless it reads the log)."""
        if self.durables:
            self.durables.append(durable)
        else:
            self.durables = [durable]
        if fed:
            self.refeed()

    def remove_durable(self, durable: DurableSubscription) -> None:
        if durable in self.durables:
            self.durables.remove(durable)  # type: ignore[union-attr]
            self.refeed()

    def refeed(self) -> None:
        """``fed`` again from ``durables``: those not reading the log (``behind`` None), in their order."""
        self.fed = [d for d in self.durables if d.behind is None] or ()

    @property
    def subscriptions(self) -> list[Subscription]:
        """The subscribers, in the order they subscribed."""
        registry = self.registry
        return [registry[consumer_id] for consumer_id in self.pending]

    def has_subscriber(self, sub: Subscription) -> bool:
        return sub.consumer_id in self.pending

    def waiting(self, sub: Subscription) -> deque[QueueEntry] | tuple[()]:
        """The copies waiting for ``sub`` here (empty when none, or when it does not read this topic)."""
        return self.pending.get(sub.consumer_id, NOTHING_WAITING)

    def add_subscription(self, sub: Subscription) -> None:
        """``sub`` reads this topic from now on (it must be in ``registry``)."""
        self.pending[sub.consumer_id] = NOTHING_WAITING if sub.waiting_in is not None else deque()

    def remove_subscription(self, sub: Subscription) -> None:
        self.pending.pop(sub.consumer_id, None)

    def recover(self, sub: Subscription) -> bool:
        """Give a retroactive subscriber the retained message first; whether there was one."""
        retained = self.retained
        if retained is None or sub.consumer_id not in self.pending:
            return False
        self.waiting_deque(sub).appendleft(QueueEntry(retained, self.next_seq, broker_seq=self.broker_sequence.take()))
        self.next_seq += 1
        if sub.waiting_in is not None:
            sub.waiting_in[self] = None
        return True

    def waiting_deque(self, sub: Subscription) -> deque[QueueEntry]:
        """The subscriber's waiting copies, made a deque if it was ``NOTHING_WAITING``."""
        pending = self.pending[sub.consumer_id]
        if pending is NOTHING_WAITING:
            pending = self.pending[sub.consumer_id] = deque()
        return pending  # type: ignore[return-value]

    def consume(self, entry: QueueEntry) -> None:
        """A subscriber acked its copy: only counted, as the copy was the subscriber's own."""
        sub = entry.holder
        if sub is not None and sub.inflight_record is not None:
            count_acked(sub.inflight_record, entry.message.message_id)

    def expire_dispatched(self, entry: QueueEntry) -> None:
        """A subscriber's client found its copy expired (an EXPIRED ack): counted as ActiveMQ's ack does."""
        sub = entry.holder
        if sub is not None and sub.inflight_record is not None:
            for topic in count_acked(sub.inflight_record, entry.message.message_id, from_oldest=True):
                topic.expired += 1

    def publish(self, message: Message, publisher_connection: int, broker_seq: int = 0) -> int:
        """Give each subscriber its copy; the message's broker sequence id (``broker_seq``, or the next one)."""
        seq = self.next_seq
        self.next_seq = seq + 1
        self.enqueued += 1
        if not broker_seq:
            broker_seq = self.broker_sequence.take()
        registry = self.registry
        for consumer_id, pending in self.pending.items():
            sub = registry[consumer_id]
            if sub.no_local and sub.connection_id == publisher_connection:
                continue
            if sub.selector is not None and not sub.matches(message, 0):
                continue
            if pending is NOTHING_WAITING:
                pending = self.pending[consumer_id] = deque()  # the key is there: the dict keeps its size
            pending.append(QueueEntry(message, seq, broker_seq=broker_seq))  # type: ignore[union-attr]
            waiting = sub.waiting_in
            if waiting is not None:
                waiting[self] = None
            if 0 <= self.pending_limit < len(pending):
                self._discard_oldest(sub, pending)  # type: ignore[arg-type]
        return broker_seq

    def _discard_oldest(self, sub: Subscription, pending: deque[QueueEntry]) -> None:
        """ActiveMQ's TopicSubscription: what waits beyond the window is kept to the limit, the oldest going first
        (the first ``room`` entries are about to be dispatched, so they are not waiting)."""
        room = max(sub.room(), 0)
        while len(pending) - room > self.pending_limit:
            entry = pending[room]
            del pending[room]
            self.dequeued += 1
            if self.discarded:
                self.discarded.append((sub, entry))
            else:
                self.discarded = [(sub, entry)]

    def dispatch(self, now: float, out: list[Dispatch], expired: list[QueueEntry]) -> None:
        """Give each subscriber what waits for it, as far as its window allows."""
        registry = self.registry
        for consumer_id, pending in self.pending.items():
            if pending:
                self._dispatch_to(registry[consumer_id], pending, now, out, expired)

    def dispatch_to(self, sub: Subscription, now: float, out: list[Dispatch], expired: list[QueueEntry]) -> None:
        """:meth:`dispatch` for one subscriber: what an ack of ``sub``'s opens room for (no other subscriber's
        window changed; visiting them all made each ack cost as much as the topic had subscribers)."""
        pending = self.pending.get(sub.consumer_id)
        if pending:
            self._dispatch_to(sub, pending, now, out, expired)

    def _dispatch_to(
        self, sub: Subscription, pending: deque[QueueEntry], now: float, out: list[Dispatch], expired: list[QueueEntry]
    ) -> None:
        """What waits for ``sub`` in ``pending``, dispatched while its window has room; an expired copy goes to
        ``expired``."""
        while pending and sub.room() > 0:
            entry = pending.popleft()
            if entry.message.expiration and now >= entry.message.expiration:
                expired.append(entry)
                continue
            entry.holder = sub
            sub.dispatched[entry.message.message_id] = entry
            sub.dispatch_count += 1
            self.inflight += 1
            record = sub.inflight_record
            if record is not None:
                record.append((entry.message.message_id, self))
            if sub.prefetch == 0:
                sub.extension = max(0, sub.extension - 1)
            out.append(
                tuple.__new__(
                    Dispatch,
                    (sub.consumer_id, entry.message, entry.seq, entry.redelivery_counter, False, entry.broker_seq),
                )
            )
        if not pending and sub.waiting_in is not None:
            self.pending[sub.consumer_id] = NOTHING_WAITING


def count_before(record: deque[tuple[str, Topic]], message_id: str) -> None:
    """Count on their topics the messages dispatched before ``message_id`` (all that are listed, when it is not):
    what an INDIVIDUAL ack counts besides its own message, which its consume then counts as the record's oldest.
    (Counting it here too left the consume a scan of the whole record that found nothing, per ack: MQTT subscribers
    ack that way, and their broker CPU per message had doubled.)"""
    while record and record[0][0] != message_id:
        _, topic = record.popleft()
        topic.dequeued += 1
        topic.inflight -= 1


def count_acked(record: deque[tuple[str, Topic]], message_id: str, *, from_oldest: bool = False) -> list[Topic]:
    """Count an acked message on its topic (dequeued, no longer in flight) as ActiveMQ's ``TopicSubscription.
    updateStatsOnAck`` does, and the topics counted on. ``from_oldest``: the ack names no first message (what
    ActiveMQ's client sends for INDIVIDUAL and EXPIRED acks), so it also counts every message dispatched before it,
    and all that are listed when it is no longer listed itself. A message a subscriber closed on is never counted:
    its topic's in-flight count keeps it (recorded)."""
    if record and record[0][0] == message_id:  # the oldest: what AUTO and in-order acks name
        taken = [record.popleft()]
    elif from_oldest:
        taken = []
        while record:
            item = record.popleft()
            taken.append(item)
            if item[0] == message_id:
                break
    else:
        index = next((i for i, item in enumerate(record) if item[0] == message_id), None)
        if index is None:
            return []
        taken = [record[index]]
        del record[index]
    for _, topic in taken:
        topic.dequeued += 1
        topic.inflight -= 1
    return [topic for _, topic in taken]
