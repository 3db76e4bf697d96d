"""What the parts of the broker core share: the attributes and methods a mixin of :class:`BrokerCore` may use.

:class:`BrokerCore` (broker.py) is assembled from one class per concern (advising.py, durable_consumers.py) so that no
module holds everything; this class only declares, for the type checker, what they share. It adds no attribute at
run time (the core keeps few instance attributes, see BrokerCore's note).

A concern that needs only a few of the core's tables is a part instead, built from those and tested alone (the
replayable reads, replay_reads.py). The mixins (advising, durable consumers, memory limits, scheduling, topic
binding; administration, consumers, restoring and timers, which moved out of broker.py to keep it readable) read and
change the core's central tables: as parts they would hold the whole core and call back into it, the same coupling
behind one more attribute hop on the hot path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from datetime import tzinfo

    from ..message import Destination, Message
    from .commands import ConsumerInfo
    from .connection import ConnectionState
    from .durable import DurableSubscription
    from .effects import Dispatch
    from .history import History
    from .journal import DurableSaved, Journal, Stored
    from .numbering import Numbering
    from .policy import DestinationPolicy
    from .queue import Queue
    from .subscription import QueueEntry, Subscription
    from .temporary import TemporaryDestinations
    from .topic import Topic
    from .transaction import Transaction
    from .usage import MemoryUsage
    from .virtual import VirtualTopics

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
        transactions: dict[int, Transaction]
        output: list[Dispatch]
        throttles: dict[str, float]
        _throttle_due: dict[str, float]
        _pull_timers: list[tuple[float, int, int]]
        _next_sweep: float | None
        virtual_topics: VirtualTopics | None
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

        def _advise_destination(self, destination: Destination, *, added: bool) -> None: ...

        def _dispatch_destination(self, destination: Destination) -> None: ...

        def _dispatch_queue(self, q: Queue) -> None: ...

        def _expire_entry(self, q: Queue, entry: QueueEntry, now: float, *, pending: bool) -> None: ...

        def _fire_due_jobs(self, now: float) -> None: ...

        def catch_up_queue(self, name: str) -> bool: ...

        def _catch_up_expiring(self, now: float) -> None: ...

        def _drop_shares(self, name: str) -> None: ...

        def _shares_handed(self, name: str, seqs: Sequence[int]) -> None: ...

        def _new_durable(
            self,
            client_id: str,
            name: str,
            topic: str,
            selector_text: str | None,
            no_local: bool,
            journaled: bool = True,
        ) -> DurableSubscription: ...

        def _restore_logged(self, record: Stored) -> None: ...

        def _restore_log_on_disk(self, name: str, seqs: Sequence[int]) -> None: ...

        def _restore_shares(self, shares: Iterable[tuple[str, int, str, int, int, int]]) -> None: ...

        def _restore_positions(self, saved: Iterable[DurableSaved]) -> None: ...

        def _add_durable_consumer(self, conn: ConnectionState, info: ConsumerInfo) -> int: ...

        def _bind_topics(self, sub: Subscription, retroactive: bool) -> None: ...

        def _dispatch_for(self, sub: Subscription) -> None: ...

        def _replay_advisories(self, sub: Subscription) -> None: ...

        def _defer(self, durable: DurableSubscription, position: int | None = None, journaled: bool = True) -> None: ...
