"""What the driver shows of itself: live queue views, broker counters, listener failures.

Kept apart from :mod:`minibroker._driver.broker` so the driver file holds only the driving; everything here reads the
broker through its public methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from .._core.queue import QueueStatistics
from ..message import Body, Destination, Message

if TYPE_CHECKING:
    from .broker import Broker

__all__ = [
    "BrokerStatistics",
    "ConnectionView",
    "ConsumerView",
    "ListenerFailure",
    "ProducerView",
    "QueueView",
    "ScheduledJobView",
]


@attrs.frozen(slots=True)
class ListenerFailure:
    """An exception a message listener raised: which consumer, which message, what."""

    consumer: str
    message_id: str
    body: Body
    error: BaseException


@attrs.frozen(slots=True)
class ConnectionView:
    """An open client connection, as ActiveMQ's connection view lists it
    (:meth:`BrokerConnection.connection_listing`)."""

    connection_id: int
    #: the ``ID:...`` name its consumers' and producers' ids start with
    name: str
    client_id: str | None
    #: the user it logged in as (None: no credentials, e.g. the application itself in process)
    user: str | None
    #: TCP, TLS, STOMP, MQTT or HTTP rather than in process
    remote: bool
    consumers: int
    producers: int
    transactions: int
    #: the edge it came through ("native", "STOMP", "MQTT", "HTTP"; None: in process)
    protocol: str | None = None
    #: where the client connects from (``tcp://host:port``; None in process)
    remote_address: str | None = None


@attrs.frozen(slots=True)
class ConsumerView:
    """A consumer, as ActiveMQ's subscription views list it (:meth:`BrokerConnection.consumer_listing`)."""

    consumer_id: int
    connection_id: int
    client_id: str | None
    #: what it reads: a queue, a topic (a durable subscription: its topic), a composite or a wildcard
    destination: Destination
    selector: str | None
    prefetch: int
    #: messages dispatched to it and not acked yet
    in_flight: int
    #: messages dispatched to it so far
    dispatched: int
    browser: bool = False
    exclusive: bool = False
    #: the durable subscription's name, for a durable subscriber
    durable_name: str | None = None


@attrs.frozen(slots=True)
class ProducerView:
    """A producer (:meth:`BrokerConnection.producer_listing`)."""

    producer_id: int
    connection_id: int
    client_id: str | None
    #: where it sends (None: an anonymous producer, which names a destination per message)
    destination: Destination | None


@attrs.frozen(slots=True)
class ScheduledJobView:
    """A message waiting in the scheduler, as ActiveMQ's ``JobSchedulerView`` lists a job
    (:meth:`BrokerConnection.scheduled_jobs`): a delayed, repeating or cron job, or a broker-side redelivery."""

    #: the job's id (its message's id, as ActiveMQ's ``scheduledJobId``)
    job_id: str
    #: when it is due next, on the broker's clock
    due: float
    #: the message as it waits (its ``AMQ_SCHEDULED_*`` properties say delay, period, repeats and cron entry)
    message: Message
    #: above 0: a redelivery the broker scheduled (the redelivery plugin), this many deliveries in
    redelivery_counter: int


@attrs.frozen(slots=True)
class BrokerStatistics:
    """Counts across the whole broker at one moment (``broker.statistics()``; ``minibroker stat`` prints them)."""

    connections: int
    consumers: int
    queues: int
    topics: int
    transactions: int


class QueueView:
    """A live, read-only look at one queue: ``size`` counts unacked messages, in flight included."""

    __slots__ = ("_broker", "name")

    def __init__(self, broker: Broker, name: str) -> None:
        self._broker = broker
        self.name = name

    def _stats(self) -> QueueStatistics:
        stats = self._broker.queue_statistics(self.name)
        return QueueStatistics(self.name, 0, 0, 0, 0, 0, 0, 0) if stats is None else stats

    @property
    def exists(self) -> bool:
        return self._broker.has_queue(self.name)

    @property
    def size(self) -> int:
        return self._stats().size

    @property
    def inflight(self) -> int:
        return self._stats().inflight

    @property
    def enqueued(self) -> int:
        return self._stats().enqueued

    @property
    def dequeued(self) -> int:
        return self._stats().dequeued

    @property
    def expired(self) -> int:
        return self._stats().expired

    @property
    def consumers(self) -> int:
        return self._stats().consumers

    def statistics(self) -> QueueStatistics:
        return self._stats()

    def browse(self) -> list[Message]:
        """The messages not yet acked, oldest first, without consuming them (every one: no browse page). A test
        that browses a dead-letter queue has seen its dead letters: the pytest plugin's teardown expects them."""
        messages = self._broker.browse_all(self.name)
        self._broker.observed_messages.update(m.message_id for m in messages)
        return messages

    def purge(self) -> int:
        return self._broker.purge(self.name)

    @property
    def memory_usage(self) -> int:
        """Bytes held by the queue's unacked messages (``Message.size_estimate()``), as its memory limit counts."""
        return self._broker.queue_memory(self.name)

    def __repr__(self) -> str:
        s = self._stats()
        return f"<QueueView {self.name} size={s.size} inflight={s.inflight}>"
