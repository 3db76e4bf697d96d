"""Consumers come and go: a subscription made for each (its window, its selector, the destinations it reads, a
wildcard's or a composite's included), and what a closing one held given back (semantics §1, "Close"); a
prefetch-0 consumer's pulls, and a prefetch changed on the way. A part of
:class:`~minibroker._core.broker.BrokerCore` (state.py says how the parts share the core)."""

from __future__ import annotations

import heapq
from collections import OrderedDict, deque

from ..errors import InvalidAcknowledge, InvalidDestination, InvalidSelector, TopicSubscriptionError
from ..message import Destination, DestinationKind
from ..refusals import check_consumer_destination
from .advisory import ADVISORY_PREFIX, MASTER_BROKER
from .commands import ConsumerInfo
from .durable import DURABLE_PREFIX
from .effects import Dispatch
from .multi import Copies, QueueSet, SubscriptionOnMany, parts_of, reads, reads_many
from .queue import Queue
from .state import CoreState
from .subscription import QueueEntry, Subscription
from .topic import Topic

__all__ = ["NOW_UNKNOWN_DELIVERED", "Consumers"]

QUEUE = DestinationKind.QUEUE

#: ``lastDeliveredSequenceId`` when the consumer went away without saying (transport failure): count everything.
NOW_UNKNOWN_DELIVERED = -2


class Consumers(CoreState):
    """Adding and removing consumers, pulls and prefetch changes."""

    def add_consumer(self, connection_id: int, info: ConsumerInfo) -> int:
        conn = self._connection(connection_id)
        if info.subscription_name is not None:
            return self._add_durable_consumer(conn, info)
        check_consumer_destination(info.destination)  # advisories, options, ...: UnsupportedFeature (issue 17)
        self.temporaries.check_consumer(connection_id, info.destination)
        if info.prefetch < 0:
            raise InvalidDestination(f"prefetch must be >= 0, not {info.prefetch}", prefetch=info.prefetch)
        selector = None
        if info.selector:
            from ..selector import parse_selector  # only consumers with a selector need the parser (~4 ms to import)

            try:
                selector = parse_selector(info.selector)
            except InvalidSelector as exc:
                if info.destination.kind is QUEUE:
                    raise
                # TopicRegion.createSubscription wraps whatever failed (a durable subscription's does not)
                raise TopicSubscriptionError(
                    "Couldn't create TopicSubscription", selector=info.selector, reason=exc.message
                ) from exc
        numbering = self.numbering
        consumer_id = numbering.consumer
        numbering.consumer = consumer_id + 1
        source: Queue | Topic | QueueSet
        many = reads_many(info.destination)
        virtual = self.virtual_topics
        if (
            many
            and virtual is not None
            and info.destination.kind is QUEUE
            and info.destination.name not in self.queues
            and virtual.makes_literal(info.destination.name)
        ):
            self.queue(info.destination.name)  # ActiveMQ makes a queue of the wildcard's literal name (virtual.py)
        if many:
            # where its acks go: the queue holding each message, or (topics) counted on no topic of the broker
            source = QueueSet() if info.destination.kind is QUEUE else Topic(info.destination)
        elif info.destination.kind is QUEUE:
            source = self.queue(info.destination.name)
        else:
            source = self.topic(info.destination.name)
        sub = (SubscriptionOnMany if many else Subscription)(
            dispatched=Copies() if many else {},
            consumer_id=consumer_id,
            connection_id=connection_id,
            destination=info.destination,
            source=source,
            prefetch=info.prefetch,
            selector=selector,
            priority=info.priority,
            exclusive=info.exclusive,
            browser=info.browser,
            no_local=info.no_local,
        )
        if many and info.destination.kind is not QUEUE:
            sub.waiting_in = OrderedDict()
        if info.destination.kind is not QUEUE:
            sub.inflight_record = deque()
        self.subscriptions[consumer_id] = sub
        conn.consumers.add(consumer_id)
        if isinstance(source, Queue):
            source.add_consumer(sub)
        elif many:
            self.subs_on_many.append(sub)
            if isinstance(source, QueueSet):
                exact, patterns = parts_of(info.destination)
                # a composite's parts by name, a wildcard's by a pass over the queues (in the order they were made)
                candidates = (
                    [q for q in self.queues.values() if reads(info.destination, q.destination.name)]
                    if patterns
                    else [q for name in exact if (q := self.queues.get(name)) is not None]
                )
                if not patterns:
                    order = {name: i for i, name in enumerate(self.queues)}
                    candidates.sort(key=lambda q: order[q.destination.name])
                for q in candidates:
                    if (
                        not q.destination.name.startswith(DURABLE_PREFIX)
                        and not self.temporaries.is_temporary(q.destination)
                        and self._may_read(sub, q.destination)
                    ):
                        source.queues.append(q)
                        q.add_consumer(sub)
            else:  # a step at a time when there are many topics (binding.py), retained messages on the way
                self._bind_topics(sub, info.retroactive)
        elif isinstance(source, Topic):
            source.add_subscription(sub)
            if info.retroactive:
                source.recover(sub)  # its retained message first
        self._dispatch_for(sub)
        if self.advisory_support and not info.destination.name.startswith(DURABLE_PREFIX):
            if info.destination.name.startswith(ADVISORY_PREFIX):
                self._replay_advisories(sub)
            else:
                if info.destination.kind is not QUEUE and reads(info.destination, MASTER_BROKER):
                    # a wildcard over the advisory topics (``>``, an MQTT ``#``) gets the master broker's last image
                    # first, as every topic it reads replays what it keeps (ActiveMQ's recovery policies)
                    self._replay_advisories(sub)
                self._advise_consumer(sub, info.destination, added=True)
        return consumer_id

    def remove_consumer(self, connection_id: int, consumer_id: int, last_delivered_seq: int = -1) -> None:
        """A consumer goes away; what it held goes back to the head of the queue (semantics §1, "Close")."""
        sub = self.subscriptions.get(consumer_id)
        if sub is None or sub.connection_id != connection_id:
            return
        del self.subscriptions[consumer_id]
        self.connections[connection_id].consumers.discard(consumer_id)
        sub.closed = True
        if self.durables and sub.destination.name.startswith(DURABLE_PREFIX):
            for durable in self.durables.values():
                if durable.consumer_id == consumer_id:
                    durable.consumer_id = None
                    if durable.shares_log:
                        self._defer(durable)
                    if self.advisory_support:
                        self._advise_consumer(sub, Destination.topic(durable.topic), added=False)
        held = [e for e in sub.dispatched.values() if e.acked_in_txn is None]
        sub.dispatched.clear()
        self._detach(sub, held, last_delivered_seq)
        if self.advisory_support and not sub.destination.name.startswith((DURABLE_PREFIX, ADVISORY_PREFIX)):
            self._advise_consumer(sub, sub.destination, added=False)

    def _detach(self, sub: Subscription, held: list[QueueEntry], last_delivered_seq: int) -> None:
        """Take a closing subscription out of the destinations it reads; what it held goes back."""
        source = sub.source
        if sub.destination.is_topic:
            if isinstance(sub, SubscriptionOnMany):
                self.subs_on_many.remove(sub)
                self.binding.pop(sub.consumer_id, None)
                for topic in self.topics.values():
                    topic.remove_subscription(sub)
                return
            self.topic(sub.destination.name).remove_subscription(sub)
            return
        if isinstance(source, QueueSet):
            self.subs_on_many.remove(sub)
            for q in source.queues:
                self._release(q, sub, [e for e in held if q.entries.get(e.seq) is e], last_delivered_seq)
        else:
            assert isinstance(source, Queue)
            self._release(source, sub, held, last_delivered_seq)

    def _release(self, q: Queue, sub: Subscription, held: list[QueueEntry], last_delivered_seq: int) -> None:
        """A closing consumer leaves ``q``: what it held from there goes back to the head (semantics §1, "Close")."""
        q.remove_consumer(sub)
        last = None if last_delivered_seq == NOW_UNKNOWN_DELIVERED else last_delivered_seq
        if q.destination.name.startswith(DURABLE_PREFIX):
            q.release_durable(held, last)
        else:
            q.release(held, last)
        now = self.clock.now()
        for entry in held:
            self.history.add(
                entry.message.message_id, now, "released", sub.consumer_id, redelivery_counter=entry.redelivery_counter
            )
        self._dispatch_destination(q.destination)

    def pull(self, connection_id: int, consumer_id: int, timeout: float) -> None:
        """A prefetch-0 consumer asks for one message (semantics §3, "Pull").

        ``timeout`` < 0: answer now (a message or a null dispatch); 0: wait for a message indefinitely; > 0: a null
        dispatch after ``timeout`` seconds if nothing was dispatched meanwhile.
        """
        sub = self._subscription(connection_id, consumer_id)
        if sub.prefetch != 0:
            return
        sub.extension = 1
        mark = sub.dispatch_count
        self._dispatch_destination(sub.destination)
        if sub.dispatch_count != mark:
            return
        if timeout < 0:
            sub.extension = 0
            self.output.append(Dispatch(consumer_id, None))
        elif timeout > 0:
            heapq.heappush(self._pull_timers, (self.clock.now() + timeout, consumer_id, mark))
            self.timers_set += 1

    def set_prefetch(self, connection_id: int, consumer_id: int, prefetch: int) -> None:
        """A consumer's prefetch changes (ActiveMQ's ``ConsumerControl``, which a failover client sends to give its
        restored consumers their prefetch back): the window is the new one from now on, and what it has room for is
        dispatched (``PrefetchSubscription.setPrefetchSize``). What the consumer holds beyond a smaller window stays
        with it until acked."""
        if prefetch < 0:
            raise InvalidDestination(f"prefetch must be >= 0, not {prefetch}", prefetch=prefetch)
        sub = self._subscription(connection_id, consumer_id)
        sub.prefetch = prefetch
        self._dispatch_for(sub)

    def _subscription(self, connection_id: int, consumer_id: int) -> Subscription:
        sub = self.subscriptions.get(consumer_id)
        if sub is None or sub.connection_id != connection_id:
            raise InvalidAcknowledge(f"unknown consumer {consumer_id}", consumer_id=consumer_id)
        return sub
