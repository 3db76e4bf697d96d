"""The core's producers and the advisories it publishes (the messages themselves are built in advisory.py)."""

from __future__ import annotations

from ..message import Destination, Message, PropertyValue, composite_parts
from .advisory import (
    ADVISORY_PREFIX,
    CONNECTION,
    CONSUMER,
    DESTINATION_TOPICS,
    MASTER_BROKER,
    PRODUCER,
    advisory_message,
    advisory_topic,
    connection_info,
    consumer_info,
    destination_info,
    java_hash_order,
    master_broker_info,
    message_info,
    producer_info,
    remove_info,
)
from .durable import DURABLE_PREFIX
from .multi import QueueSet, SubscriptionOnMany, reads
from .state import CoreState
from .subscription import QueueEntry, Subscription
from .temporary import default_connection_name

__all__ = ["Advising"]


class Advising(CoreState):
    """Producers (counted per destination) and every advisory the broker publishes, as ActiveMQ's AdvisoryBroker."""

    def add_producer(self, connection_id: int, producer_id: int, destination: Destination | None) -> None:
        """A producer comes: counted on its destination (an anonymous one, None, on none) and advised. One on a
        temporary destination that is gone is refused (ActiveMQ's addProducer adds the destination without creating
        a temporary one: DestinationDoesNotExistException)."""
        conn = self._connection(connection_id)
        if destination is not None:
            self.temporaries.check_send(destination)
        conn.producers[producer_id] = destination
        if destination is not None and self.advisory_support:
            for part in composite_parts(destination):  # a composite producer: advised on each part
                if not part.name.startswith(ADVISORY_PREFIX):
                    self._advise(
                        self._advisory_topic(PRODUCER, part),
                        producer_info(conn.name, producer_id, part),
                        producerCount=self.producer_count(part),
                    )

    def remove_producer(self, connection_id: int, producer_id: int) -> None:
        conn = self.connections.get(connection_id)
        if conn is None or producer_id not in conn.producers:
            return
        destination = conn.producers.pop(producer_id)
        if destination is not None and self.advisory_support:
            for part in composite_parts(destination):
                if not part.name.startswith(ADVISORY_PREFIX):
                    self._advise(
                        self._advisory_topic(PRODUCER, part),
                        remove_info(f"{conn.name}:1:{producer_id}"),
                        producerCount=self.producer_count(part),
                    )

    def producer_count(self, destination: Destination) -> int:
        return sum(1 for c in self.connections.values() for d in c.producers.values() if d == destination)

    def _advisory_topic(self, prefix: str, destination: Destination) -> Destination:
        return advisory_topic(prefix, destination, self.temporaries.is_temporary(destination))

    def _advise(self, topic: Destination, data: dict[str, object], **properties: PropertyValue) -> None:
        """Publish an advisory, when anyone could read its topic."""
        if topic.name in self.topics or self.subs_on_many:
            self._enqueue(advisory_message(topic, data, self.clock.now(), self.broker_name, **properties))

    def _consumer_count(self, destination: Destination) -> int:
        if destination.is_topic:
            t = self.topics.get(destination.name)
            if t is None:
                return 0
            # an offline durable subscription still counts (ActiveMQ's RemoveInfo says so; recorded)
            return self.subscriber_count(t)
        sources = [s.source for s in self.subs_on_many if s.destination == destination]
        if sources and isinstance(sources[0], QueueSet):
            return sum(len(q.consumers) for q in sources[0].queues)
        q = self.queues.get(destination.name)
        return 0 if q is None else len(q.consumers)

    def _advise_consumer(self, sub: Subscription, destination: Destination, *, added: bool) -> None:
        if "," in destination.name:  # a composite consumer: advised on each part it reads
            for part in composite_parts(destination):
                if part.kind is destination.kind:
                    self._advise_consumer(sub, part, added=added)
            return
        conn = self.connections.get(sub.connection_id)
        name = default_connection_name(sub.connection_id) if conn is None else conn.name
        data = self._consumer_info(name, sub, destination) if added else remove_info(f"{name}:1:{sub.consumer_id}")
        self._advise(self._advisory_topic(CONSUMER, destination), data, consumerCount=self._consumer_count(destination))

    def _consumer_info(self, connection_name: str, sub: Subscription, destination: Destination) -> dict[str, object]:
        durable = None
        if sub.destination.name.startswith(DURABLE_PREFIX):
            durable = next((d for d in self.durables.values() if d.consumer_id == sub.consumer_id), None)
        return consumer_info(
            connection_name,
            sub.consumer_id,
            destination,
            _selector_text(sub) if durable is None else durable.selector_text,
            sub.prefetch,
            browser=sub.browser,
            no_local=sub.no_local if durable is None else durable.no_local,
            exclusive=sub.exclusive,
            priority=sub.priority,
            subscription_name=None if durable is None else durable.name,
        )

    def _advise_destination(self, destination: Destination, *, added: bool) -> None:
        """A destination was made or removed: a DestinationInfo on ``ActiveMQ.Advisory.Queue`` (``.Topic``,
        ``.TempQueue``, ``.TempTopic``); none for advisory topics and durable subscriptions' internal queues."""
        if destination.name.startswith((ADVISORY_PREFIX, DURABLE_PREFIX)):
            return
        temporary = self.temporaries.is_temporary(destination)
        self._advise(_destination_topic(destination, temporary), destination_info(destination, temporary, added=added))

    def _destination_replay(self, temporary_only: bool, now: float) -> list[Message]:
        """One add advisory per destination there is, in the order ActiveMQ's map of them iterates."""
        names: list[tuple[str, Destination]] = []
        for table in (self.queues, self.topics):
            for name, holder in table.items():
                dest = holder.destination
                if name.startswith((ADVISORY_PREFIX, DURABLE_PREFIX)):
                    continue
                if temporary_only and not self.temporaries.is_temporary(dest):
                    continue
                names.append((name, dest))
        by_name: dict[str, list[Destination]] = {}
        for name, dest in names:
            by_name.setdefault(name, []).append(dest)
        replay = []
        for name in java_hash_order(list(by_name)):
            for dest in by_name[name]:
                temporary = self.temporaries.is_temporary(dest)
                replay.append(
                    advisory_message(
                        _destination_topic(dest, temporary),
                        destination_info(dest, temporary, added=True),
                        now,
                        self.broker_name,
                    )
                )
        return replay

    def _advise_message(self, prefix: str, destination: Destination, message: Message) -> None:
        if destination.name.startswith(ADVISORY_PREFIX):
            return
        self._advise(
            self._advisory_topic(prefix, destination), message_info(message), orignalMessageId=message.message_id
        )

    def _replay_advisories(self, sub: Subscription) -> None:
        """A new advisory subscriber first hears of what is there now, alone (ActiveMQ's replay in addConsumer)."""
        now = self.clock.now()
        wants = _replays(sub.destination)
        replay: list[Message] = []
        if reads(sub.destination, MASTER_BROKER):  # the master broker advisory's topic keeps its last image
            replay.append(
                advisory_message(Destination.topic(MASTER_BROKER), master_broker_info(), now, self.broker_name)
            )
        if "connections" in wants:
            for conn in self.connections.values():
                replay.append(
                    advisory_message(
                        Destination.topic(CONNECTION), connection_info(conn.name, conn.client_id), now, self.broker_name
                    )
                )
        if "destinations" in wants or "temporary destinations" in wants:
            replay.extend(self._destination_replay("destinations" not in wants, now))
        for conn in self.connections.values() if "producers" in wants else ():
            for producer_id, dest in conn.producers.items():
                if dest is not None:
                    replay.append(
                        advisory_message(
                            self._advisory_topic(PRODUCER, dest),
                            producer_info(conn.name, producer_id, dest),
                            now,
                            self.broker_name,
                            producerCount=self.producer_count(dest),
                        )
                    )
        for other in list(self.subscriptions.values()) if "consumers" in wants else ():
            dest = other.destination
            if other is sub or dest.name.startswith(ADVISORY_PREFIX):
                continue
            if dest.name.startswith(DURABLE_PREFIX):
                durable = next((d for d in self.durables.values() if d.consumer_id == other.consumer_id), None)
                if durable is None:
                    continue
                dest = Destination.topic(durable.topic)
            # a composite consumer is advised on each part it reads, as when it came (_advise_consumer)
            parts = [p for p in composite_parts(dest) if p.kind is dest.kind] if "," in dest.name else [dest]
            for part in parts:
                replay.append(
                    advisory_message(
                        self._advisory_topic(CONSUMER, part),
                        self._consumer_info(default_connection_name(other.connection_id), other, part),
                        now,
                        self.broker_name,
                        consumerCount=self._consumer_count(part),
                    )
                )
        for message in replay:
            name = message.destination.name
            if name == sub.destination.name or (isinstance(sub, SubscriptionOnMany) and reads(sub.destination, name)):
                t = self.topic(name)
                if t.has_subscriber(sub):
                    t.waiting_deque(sub).append(QueueEntry(message, t.next_seq, broker_seq=t.broker_sequence.take()))
                    t.next_seq += 1
                    t.enqueued += 1
                    self._dispatch_topic(t)


def _selector_text(sub: Subscription) -> str | None:
    return None if sub.selector is None else sub.selector.text


def _destination_topic(destination: Destination, temporary: bool) -> Destination:
    kind = "Queue" if destination.is_queue else "Topic"
    return Destination.topic(f"{ADVISORY_PREFIX}{'Temp' if temporary else ''}{kind}")


def _replays(destination: Destination) -> frozenset[str]:
    """What a new subscriber to ``destination`` hears of first, by ActiveMQ's ``AdvisorySupport`` tests on its name
    (each part of a composite): ``ActiveMQ.Advisory.Connection`` exactly; the four destination topics (only the
    temporary ones when every part is ``TempQueue``/``TempTopic``); any topic under ``Producer.``/``Consumer.``."""
    wants: set[str] = set()
    parts = composite_parts(destination)
    for part in parts:
        if part.is_queue:
            continue
        name = part.name
        if name == CONNECTION:
            wants.add("connections")
        if name in DESTINATION_TOPICS:
            wants.add("destinations")
        if name.startswith(PRODUCER):
            wants.add("producers")
        if name.startswith(CONSUMER):
            wants.add("consumers")
    temp_topics = {ADVISORY_PREFIX + "TempQueue", ADVISORY_PREFIX + "TempTopic"}
    if "destinations" in wants and all(p.is_topic and p.name in temp_topics for p in parts):
        wants.discard("destinations")
        wants.add("temporary destinations")
    return frozenset(wants)
