"""What a test or an operator reads of the broker: queues, topics, durable subscriptions, statistics, dead letters
and a message's history. A part of :class:`~minibroker.Broker` (its views), kept apart from the one door's
operations (_driver.py); nothing here changes the broker."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from .._core.durable import DURABLE_PREFIX, DurableView
from .._core.history import DeadLetterRecord, HistoryRecord
from .._core.queue import QueueStatistics
from ..clock import settle
from ..message import Destination, DestinationKind, Message

if TYPE_CHECKING:
    from .._core.broker import BrokerCore
    from .broker import Broker
    from .results import BrokerStatistics, QueueView  # the views' classes load when first asked for (issue 45)

__all__: list[str] = []


class _BrokerViews:
    """The read-only half of :class:`~minibroker.Broker` (documented with it)."""

    if TYPE_CHECKING:
        core: BrokerCore
        _incarnation: int
        observed_messages: set[str]

    def queue(self, name: str) -> QueueView:
        from .results import QueueView

        return QueueView(cast("Broker", self), name)

    def queue_names(self) -> list[str]:
        """The queues, without the internal ones of durable subscriptions (see :meth:`durable_subscriptions`)."""
        return sorted(name for name in self.core.queues if not name.startswith(DURABLE_PREFIX))

    def topic_names(self) -> list[str]:
        return sorted(self.core.topics)

    def durable_subscriptions(self, topic: str | None = None) -> list[DurableView]:
        """The durable topic subscriptions (of ``topic``, or all): client id, name, topic, selector, whether a
        subscriber is active, and how many messages they keep."""
        return self.core.durable_subscriptions(topic)

    def readable_as(self, queue: str) -> Destination:
        """What reading ``queue`` by range needs the right to read: the queue, or for a durable subscription's queue
        (``durable://client/name``, what a Spark topic source reads) the subscription's topic."""
        if queue.startswith(DURABLE_PREFIX):
            for durable in self.core.durables.values():
                if durable.queue.destination.name == queue:
                    return Destination.topic(durable.topic)
        return Destination.queue(queue)

    def topic_statistics(self, topic: str) -> QueueStatistics | None:
        """A topic's counts, as ActiveMQ's topic view gives them: messages published (enqueued), acknowledged by any
        subscriber, durable or not (dequeued), and subscribers (consumers; an offline durable subscription counts)."""
        t = self.core.topics.get(topic)
        if t is None:
            return None
        dequeued = t.dequeued + sum(d.queue.dequeued for d in t.durables)
        consumers = self.core.subscriber_count(t)
        # dispatched and not acked yet, prefetched ones included (ActiveMQ's topic InFlightCount; recorded)
        inflight = t.inflight + sum(d.queue.inflight for d in t.durables)
        return QueueStatistics(topic, 0, inflight, t.enqueued, dequeued, t.expired, consumers, 0)

    def retained_messages(self) -> dict[str, Message]:
        """Each topic's retained message (MQTT's retain flag, ActiveMQ's ``ActiveMQ.Retain``), by topic name: what
        the capture fixture and the report read to tell a retained delivery from a live one."""
        return {name: t.retained for name, t in self.core.topics.items() if t.retained is not None}

    def has_queue(self, name: str) -> bool:
        """Whether queue ``name`` exists (a send, a consumer or a restore created it); asking creates nothing."""
        return name in self.core.queues

    def has_destination(self, destination: Destination) -> bool:
        core = self.core
        return (
            destination.name in core.queues
            if destination.kind is DestinationKind.QUEUE
            else destination.name in core.topics
        )

    def queue_statistics(self, name: str) -> QueueStatistics | None:
        """The counters of queue ``name``; None when it does not exist (and asking does not create it)."""
        self.core.catch_up_queue(name)  # a durable subscription away: its messages from its topic's log first
        q = self.core.queues.get(name)
        return None if q is None else q.statistics()

    def browse_page(self, queue: str, selector: str | None = None) -> list[Message]:
        """What a client's queue browser sees: the messages not yet acked, oldest first, at most the queue's
        ``max_browse_page_size`` (ActiveMQ's ``maxBrowsePageSize``); nothing when the queue does not exist. With a
        ``selector`` (:class:`~minibroker.errors.InvalidSelector` if it does not parse), only matching messages, and
        the page counts those."""
        compiled = None
        if selector is not None:
            from ..selector import parse_selector  # only browsers with a selector need the parser (~4 ms to import)

            compiled = parse_selector(selector)
        q = self.core.queues.get(queue)
        return [] if q is None else self.core.browse(queue, limit=q.policy.max_browse_page_size, selector=compiled)

    @property
    def scheduled_count(self) -> int:
        """Messages waiting in the scheduler: ``AMQ_SCHEDULED_*`` jobs and the redelivery plugin's redeliveries."""
        return self.core.scheduled

    def next_scheduled_time(self) -> float | None:
        """The broker-clock time of the scheduler's next delivery (None: nothing is scheduled)."""
        return self.core.next_scheduled()

    def browse_all(self, queue: str) -> list[Message]:
        """Every message of ``queue`` not yet acked, oldest first, in flight included (no browse page)."""
        return self.core.browse(queue)

    def queue_memory(self, queue: str) -> int:
        """Bytes held by the queue's unacked messages, as its memory limit counts them (0: no such queue)."""
        self.core.catch_up_queue(queue)
        q = self.core.queues.get(queue)
        return 0 if q is None else q.memory

    def client_connected(self, client_id: str) -> bool:
        """Whether a connection with this client id is open (ActiveMQ allows one)."""
        return any(c.client_id == client_id for c in self.core.connections.values())

    @property
    def incarnation(self) -> int:
        """Grows by one at each :meth:`restart`: an edge that kept a connection id from an older incarnation knows
        that connection is gone."""
        return self._incarnation

    def dead_letters(self) -> tuple[DeadLetterRecord, ...]:
        """Every message the broker gave up on (dead-lettered or dropped), oldest first (at most 10,000)."""
        return tuple(self.core.dead_letters)

    def unobserved_dead_letters(self) -> tuple[DeadLetterRecord, ...]:
        """The dead letters no test has looked at: not browsed (``broker.queue(dlq).browse()``), not listed by
        :func:`minibroker.testing.dead_letters` or :func:`~minibroker.testing.assert_dead_lettered`, and still in
        their dead-letter queue (one a consumer took or a purge removed was handled). Dropped messages sit nowhere
        to be looked at: they are always unobserved."""
        observed = self.observed_messages
        held: dict[str, set[str]] = {}
        unobserved = []
        for record in self.core.dead_letters:
            if record.message_id in observed:
                continue
            dlq = record.dead_letter_queue
            if dlq is not None:
                if dlq not in held:
                    held[dlq] = {m.message_id for m in self.browse_all(dlq)}
                if record.message_id not in held[dlq]:
                    continue
            unobserved.append(record)
        return tuple(unobserved)

    def history(self, message_id: str) -> tuple[HistoryRecord, ...]:
        """Everything the broker did with one message: dispatches, acks (with their type), releases, dead letters."""
        return self.core.history.of(message_id)

    @property
    def history_kept(self) -> bool:
        """Whether the broker keeps messages' histories (``history_limit`` above 0)."""
        return self.core.history.enabled

    def history_message_ids(self) -> list[str]:
        """The ids of the messages whose history the broker keeps (the last ``history_limit``), oldest first."""
        return self.core.history.message_ids()

    def statistics(self) -> BrokerStatistics:
        from .results import BrokerStatistics

        core = self.core
        return BrokerStatistics(
            len(core.connections), len(core.subscriptions), len(core.queues), len(core.topics), len(core.transactions)
        )

    async def run_ready(self) -> None:
        """Run every task that is ready now (clients, listeners) until none is, without moving the clock; unlike
        :meth:`settled`, work waiting on a timer stays waiting."""
        await settle()
