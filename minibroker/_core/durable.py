"""Durable topic subscriptions (JMS ``createDurableSubscriber``): a subscription named by (client id, name) that
keeps the topic's messages while its subscriber is away and hands them over when it comes back.

Each durable subscription is fed by its topic into a queue of its own, so it has every rule of a queue (prefetch,
the five ack modes, redelivery, the DLQ) without a second implementation; that queue is the broker's internal
``durable://<client id>/<name>`` (a name no client can spell: ``Destination.parse`` refuses ``://`` inside a name),
left out of queue listings. The messages keep their topic as destination, so consumers and the DLQ see
``topic://T``. The selector and ``no_local`` are applied when the topic publishes, as ActiveMQ's durable topic
subscription applies them (a message that does not match is never kept).

JMS's rules, in ActiveMQ's words (recorded: ``durable_*``): a client id is required; one active subscriber per
(client id, name); subscribing again with another topic or selector replaces the subscription (its messages are
dropped); unsubscribing is refused while a subscriber is active, or when there is no such subscription.
"""

from __future__ import annotations

import attrs

from ..message import Destination, DestinationKind, Message
from .queue import Queue
from .virtual import is_wildcard

__all__ = ["DURABLE_PREFIX", "DurableSubscription", "DurableView", "durable_queue_name"]

#: the prefix of the internal queues of durable subscriptions
DURABLE_PREFIX = "durable://"


def durable_queue_name(client_id: str, name: str) -> str:
    """The name of the queue that keeps durable subscription ``name`` of ``client_id`` (what a range read of a
    durable subscription reads, as the Spark source does: ``durable://client/name``)."""
    return f"{DURABLE_PREFIX}{client_id}/{name}"


@attrs.define(slots=True, eq=False)
class DurableSubscription:
    client_id: str
    name: str
    topic: str
    selector_text: str | None
    no_local: bool
    #: the subscription's own queue (internal, named by durable_queue_name)
    queue: Queue
    #: the selector, compiled (None: every message)
    selector: object = None
    #: the active subscriber's consumer id (None: offline)
    consumer_id: int | None = None
    #: offline and reading its topic's log from this log sequence number on, instead of being fed copies
    #: (topic_log.py); None: fed (online, or it cannot share the log)
    behind: int | None = None

    @property
    def shares_log(self) -> bool:
        """Whether it may read its topic's log while away: it wants every message of one topic (a selector or
        ``noLocal`` is decided at publish time, a wildcard reads several topics: those are fed copies)."""
        return self.selector is None and not self.no_local and not is_wildcard(self.topic)

    @property
    def destination(self) -> Destination:
        return Destination(DestinationKind.QUEUE, self.queue.destination.name)

    def wants(self, message: Message, publisher_client_id: str | None) -> bool:
        """Whether a message published to the topic is kept for this subscription."""
        if self.no_local and publisher_client_id is not None and publisher_client_id == self.client_id:
            return False
        if self.selector is None:
            return True
        from .subscription import header_lookup

        return bool(self.selector.matches(header_lookup(message, 0)))  # type: ignore[attr-defined]

    def view(self, logged: int = 0) -> DurableView:
        # pending: not dispatched yet; what sits in an active subscriber's prefetch is not pending (ActiveMQ's
        # durable subscription view; recorded: 0 while all three are prefetched, 3 once the subscriber is gone);
        # ``logged``: what its topic's log holds for it (topic_log.py)
        q = self.queue
        return DurableView(
            self.client_id,
            self.name,
            self.topic,
            self.selector_text,
            self.consumer_id is not None,
            q.size - q.inflight + logged,
        )


@attrs.frozen(slots=True)
class DurableView:
    """A durable subscription as ``Broker.durable_subscriptions()`` and ``minibroker stat`` show it."""

    client_id: str
    name: str
    topic: str
    selector: str | None
    active: bool
    #: messages kept for the subscription and not dispatched yet (those in an active subscriber's prefetch are not)
    pending: int
