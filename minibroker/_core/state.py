"""What the parts of the broker core share: the attributes and methods a mixin of :class:`BrokerCore` may use.

:class:`BrokerCore` (broker.py) is assembled from one class per concern (advising.py, durable_consumers.py) so that no
module holds everything; this class only declares, for the type checker, what they share. It adds no attribute at
run time (the core keeps few instance attributes, see BrokerCore's note).

A concern that needs only a few of the core's tables is a part instead, built from those and tested alone (the
replayable reads, replay_reads.py). The four mixins left (advising, durable consumers, memory limits, scheduling)
read and change the core's central tables from the send, dispatch and ack paths: as parts they would hold the whole
core and call back into it, the same coupling behind one more attribute hop on the hot path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import tzinfo

    from ..message import Destination, Message
    from .commands import ConsumerInfo
    from .connection import ConnectionState
    from .durable import DurableSubscription
    from .history import History
    from .journal import Journal
    from .numbering import Numbering
    from .policy import DestinationPolicy
    from .queue import Queue
    from .subscription import Subscription
    from .temporary import TemporaryDestinations
    from .topic import Topic
    from .usage import MemoryUsage

__all__ = ["CoreState"]


class _Clock(Protocol):
    def now(self) -> float: ...


class CoreState:
    """Declarations only (see the module's note)."""

    if TYPE_CHECKING:
        advisory_support: bool
        clock: _Clock
        connections: dict[int, ConnectionState]
        subscriptions: dict[int, Subscription]
        subs_on_many: list[Subscription]
        queues: dict[str, Queue]
        topics: dict[str, Topic]
        durables: dict[tuple[str, str], DurableSubscription]
        temporaries: TemporaryDestinations
        journal: Journal | None
        history: History
        scheduler_time_zone: tzinfo | None
        _scheduled: list[tuple[float, int, Message, int]]
        timers_set: int
        broker_name: str
        _scheduled_seq: int
        memory_limited: int
        usage: MemoryUsage
        numbering: Numbering
        binding: dict[int, Any]
        _virtual_queues: dict[str, list[str]]
        _policy_for: Callable[[Destination], DestinationPolicy]

        def _connection(self, connection_id: int) -> ConnectionState: ...

        def _enqueue(self, message: Message, connection_id: int = 0, redelivery_counter: int = 0) -> None: ...

        def _dispatch_topic(self, t: Topic, only: Subscription | None = None) -> None: ...

        def topic(self, name: str) -> Topic: ...

        def _arm_sweep(self) -> None: ...

        def _may_read(self, sub: Subscription, destination: Destination) -> bool: ...

        def subscriber_count(self, t: Topic) -> int: ...

        def _dispatch_waiting(self, sub: Subscription) -> None: ...

        def queue(self, name: str) -> Queue: ...

        def add_consumer(self, connection_id: int, info: ConsumerInfo) -> int: ...

        def purge(self, name: str) -> int: ...

        def send(self, connection_id: int, message: Message, transaction_id: int | None = None) -> None: ...

        def _advise_consumer(self, sub: Subscription, destination: Destination, *, added: bool) -> None: ...
